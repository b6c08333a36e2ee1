#include "http/page.h"

#include <stdio.h>

/* The one stylesheet. Classes the pages use: .down and .bad (red), .ok
 * (green), .warn (amber), table.map (the tablet map), .num (right
 * aligned numbers). */
static const char css[] =
	"body{font-family:sans-serif;margin:1.5em;color:#222}"
	"nav a{margin-right:1em}"
	"table{border-collapse:collapse;margin:.5em 0 1.5em}"
	"th,td{border:1px solid #ccc;padding:.25em .6em;text-align:left}"
	"th{background:#f0f0f0}"
	"td.num{text-align:right;font-family:monospace}"
	".ok{color:#176b17}.warn{color:#9a6a00}.down,.bad{color:#c00;font-weight:bold}"
	"tr.bad td{background:#fde8e8}"
	"table.map{width:100%;table-layout:fixed}"
	"table.map td{text-align:center;font-size:.85em;overflow:hidden}"
	"code{font-size:.9em}";

void http_html(struct buf *b, const char *s)
{
	for (; *s != '\0'; s++) {
		switch (*s) {
		case '&': buf_append(b, "&amp;", 5); break;
		case '<': buf_append(b, "&lt;", 4); break;
		case '>': buf_append(b, "&gt;", 4); break;
		case '"': buf_append(b, "&quot;", 6); break;
		case '\'': buf_append(b, "&#39;", 5); break;
		default: buf_push(b, (uint8_t)*s);
		}
	}
}

void http_json_str(struct buf *b, const char *s)
{
	buf_push(b, '"');
	for (; *s != '\0'; s++) {
		unsigned char c = (unsigned char)*s;
		if (c == '"' || c == '\\') {
			buf_push(b, '\\');
			buf_push(b, c);
		} else if (c < 0x20) {
			buf_printf(b, "\\u%04x", c);
		} else {
			buf_push(b, c);
		}
	}
	buf_push(b, '"');
}

void http_page_begin(struct buf *b, const char *title, const char *const *nav)
{
	buf_printf(b, "<!DOCTYPE html>\n<html><head><meta charset=\"utf-8\"><title>");
	http_html(b, title);
	buf_printf(b, "</title><style>%s</style></head><body>\n<nav>", css);
	for (; nav != NULL && nav[0] != NULL; nav += 2) {
		buf_printf(b, "<a href=\"");
		http_html(b, nav[0]);
		buf_printf(b, "\">");
		http_html(b, nav[1]);
		buf_printf(b, "</a>");
	}
	buf_printf(b, "</nav>\n<h1>");
	http_html(b, title);
	buf_printf(b, "</h1>\n");
}

void http_page_end(struct buf *b)
{
	buf_printf(b, "</body></html>\n");
}
