/* What the servers' pages and JSON answers share: the page frame with its
 * one embedded stylesheet (no script), HTML and JSON escaping.
 *
 * Threading: none (the caller's). */
#ifndef DOCRAFT_HTTP_PAGE_H
#define DOCRAFT_HTTP_PAGE_H

#include "common/buf.h"

#define HTTP_HTML "text/html; charset=utf-8"
#define HTTP_JSON "application/json"

/* <!DOCTYPE html>, <head> with the stylesheet and title (escaped), <body>,
 * a navigation line of links (nav: pairs of href and label, NULL-ended;
 * may be NULL) and an <h1> of title. */
void http_page_begin(struct buf *b, const char *title, const char *const *nav);
void http_page_end(struct buf *b);

/* s with & < > " ' escaped. */
void http_html(struct buf *b, const char *s);

/* s as a JSON string, quotes included (control characters as \u00XX; bytes
 * >= 0x80 are copied: the strings are ours, UTF-8 or ASCII). */
void http_json_str(struct buf *b, const char *s);

#endif
