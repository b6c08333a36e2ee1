# shellcheck shell=bash
# What the self-healing nemeses, the failover runner and scripts/bench-heal.sh
# ask of a cluster (issue 15), read from the docraft CLI's text (`docraft
# cluster`, `docraft tservers`, `docraft tablets`; docs/cluster.md,
# "Self-healing: commands and flags"). Sourced; every function takes the CLI
# binary and the master list first and fails (status 1) when the CLI does.
#
#   heal_counts CLI MASTERS       HEAL_UNDER, HEAL_LEADERLESS, HEAL_MOVES,
#                                 HEAL_FAILED = `docraft cluster`'s numbers
#   heal_at_rf CLI MASTERS        0 when no tablet is under-replicated and no
#                                 move is in flight
#   heal_balanced CLI MASTERS     0 when the live tservers that are not
#                                 draining hold replica counts within 1 of
#                                 each other and no move is in flight
#   heal_failed CLI MASTERS ADDR  0 when the master lists the tserver at ADDR
#                                 as failed (its replicas are being replaced)
#   heal_replicas_on CLI MASTERS TABLE ADDRS
#                                 0 when every replica of TABLE is on one of
#                                 ADDRS (comma-separated); else the first
#                                 stray one in HEAL_STRAY

HEAL_UNDER="" HEAL_LEADERLESS="" HEAL_MOVES="" HEAL_FAILED="" HEAL_STRAY=""

heal_counts() { # CLI MASTERS
	local out
	out=$("$1" --masters "$2" --timeout 5000 cluster 2>&1) || return 1
	HEAL_UNDER=$(awk -F': +' '$1 == "under-replicated" { print $2 + 0 }' <<<"$out")
	HEAL_LEADERLESS=$(awk -F': +' '$1 == "leaderless" { print $2 + 0 }' <<<"$out")
	HEAL_MOVES=$(awk -F': +' '$1 == "moves in flight" { print $2 + 0 }' <<<"$out")
	HEAL_FAILED=$(awk -F': +' '$1 == "tservers" { sub(/.* live, [0-9]+ unreachable, /, "", $2); print $2 + 0 }' <<<"$out")
	[ -n "$HEAL_UNDER" ] && [ -n "$HEAL_MOVES" ]
}

heal_at_rf() { # CLI MASTERS
	heal_counts "$1" "$2" && [ "$HEAL_UNDER" -eq 0 ] && [ "$HEAL_MOVES" -eq 0 ]
}

heal_balanced() { # CLI MASTERS
	local out
	heal_counts "$1" "$2" && [ "$HEAL_MOVES" -eq 0 ] || return 1
	out=$("$1" --masters "$2" --timeout 5000 tservers 2>&1) || return 1
	# HEARTBEAT is three words ("300 ms ago"): the columns after it are 2
	# further than in the header.
	awk 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$(c["STATE"] + 2) == "live" && $(c["DRAIN"] + 2) == "-" {
			r = $(c["REPLICAS"] + 2) + 0
			if (n == 0 || r < lo) lo = r
			if (n == 0 || r > hi) hi = r
			n++
		}
		END { exit !(n > 0 && hi - lo <= 1) }' <<<"$out"
}

heal_failed() { # CLI MASTERS ADDR
	local out
	out=$("$1" --masters "$2" --timeout 5000 tservers 2>&1) || return 1
	awk -v a="$3" 'NR == 1 { for (i = 1; i <= NF; i++) c[$i] = i; next }
		$2 == a && $(c["STATE"] + 2) == "failed" { f = 1 }
		END { exit !f }' <<<"$out"
}

heal_replicas_on() { # CLI MASTERS TABLE ADDRS
	local out
	HEAL_STRAY=""
	out=$("$1" --masters "$2" --timeout 5000 tablets "$3" 2>&1) || return 1
	HEAL_STRAY=$(awk -v addrs=",$4," '
		$1 == "TABLET" || $1 == "moves" || /^  / { next }
		{
			for (i = 2; i <= NF; i++) {
				if ($i !~ /^[0-9]+@/) continue
				a = $i
				sub(/^[0-9]+@/, "", a)
				sub(/[*(].*$/, "", a)
				if (index(addrs, "," a ",") == 0) { print $1 " " a; exit }
			}
		}' <<<"$out")
	[ -z "$HEAL_STRAY" ]
}
