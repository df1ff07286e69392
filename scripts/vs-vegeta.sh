#!/usr/bin/env bash
# vs-vegeta.sh: cloudinfer bench beside vegeta v12.13.0 on this machine,
# against one minimal loopback server (scripts/loopserver: a fixed,
# non-streamed chat completion answered at once), at constant rates and
# in a closed loop, and prints one table. CI does not run it: it takes a
# minute or two, and its figures are the machine's. Run it on a quiet
# machine; the load average is printed beside the table.
#
#   scripts/vs-vegeta.sh                     # 1000 4000 8000 12000 req/s, 10 s each
#   RATES="1000 2000" DURATION=5s scripts/vs-vegeta.sh
#   CONNS=64 ADDR=127.0.0.1:18080 SPIN=100us scripts/vs-vegeta.sh
#   SPIN=-1ns scripts/vs-vegeta.sh           # no spin: the runtime's timer alone
#   CLOUDINFER=/path/to/cloudinfer scripts/vs-vegeta.sh   # another build
#   SERVER=nethttp scripts/vs-vegeta.sh      # net/http's server, not the lean one
#
# vegeta is installed with `go install` into a temporary GOBIN (it is not
# a module dependency). CPU per request is the generator process's user +
# system time over the requests it sent (bash's `times` of the child).
# vegeta's schedule lag is read from its results (see vegeta_run), so the
# two generators' lag columns compare.
set -euo pipefail

RATES=${RATES:-"1000 4000 8000 12000"}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
ADDR=${ADDR:-127.0.0.1:18080}
SPIN=${SPIN:-} # cloudinfer's --send-spin; empty: its default
SERVER=${SERVER:-lean} # loopserver's -impl: lean or nethttp
VEGETA=${VEGETA:-github.com/tsenart/vegeta/v12@v12.13.0}

root=$(cd "$(dirname "$0")/.." && pwd)
tmp=$(mktemp -d)
server=
cleanup() {
	if [ -n "$server" ]; then kill "$server" 2>/dev/null || true; wait "$server" 2>/dev/null || true; fi
	rm -rf "$tmp"
}
trap cleanup EXIT

echo "building loopserver and cloudinfer; installing vegeta ($VEGETA)" >&2
(cd "$root" && go build -o "$tmp/loopserver" ./scripts/loopserver)
cloudinfer=${CLOUDINFER:-}
if [ -z "$cloudinfer" ]; then
	(cd "$root" && go build -o "$tmp/cloudinfer" ./cmd/cloudinfer)
	cloudinfer="$tmp/cloudinfer"
fi
GOBIN="$tmp/bin" GOFLAGS= go install "$VEGETA"
vegeta="$tmp/bin/vegeta"

"$tmp/loopserver" -addr "$ADDR" -impl "$SERVER" &
server=$!
for _ in $(seq 50); do
	curl -fsS -o /dev/null -X POST "http://$ADDR/v1/chat/completions" -d '{}' 2>/dev/null && break
	sleep 0.1
done

url="http://$ADDR/v1/chat/completions"
# The body cloudinfer sends for --prompt hello --output-tokens 1 --no-stream.
printf '{"model":"m","messages":[{"role":"user","content":"hello"}],"max_tokens":1}' >"$tmp/body.json"

# cpu_of CMD...: runs CMD and writes its CPU seconds (user + system of the
# children) to $tmp/cpu.
cpu_of() {
	local me=$BASHPID before after
	before=$(awk '{print $16+$17}' "/proc/$me/stat")
	"$@"
	after=$(awk '{print $16+$17}' "/proc/$me/stat")
	awk -v a="$after" -v b="$before" -v hz="$(getconf CLK_TCK)" 'BEGIN{printf "%.3f\n", (a-b)/hz}' >"$tmp/cpu"
}

# vegeta_run RATE: prints "sent/s p50ms p99ms cpu-us/req ok% lagp50 lagp99".
# vegeta reports no schedule lag: it is read from its hits' timestamps
# (when each hit began) against its constant pacer's schedule (hit n due
# n/RATE after the first), with its least lag taken as 0.
vegeta_run() {
	local rate=$1 args l50=- l99=-
	if [ "$rate" = closed ]; then
		args=(-rate=0 -workers="$CONNS" -max-workers="$CONNS" -connections="$CONNS")
	else
		args=(-rate="$rate/s")
	fi
	echo "POST $url" >"$tmp/targets"
	cpu_of "$vegeta" attack -targets="$tmp/targets" -body="$tmp/body.json" -header="Content-Type: application/json" \
		-duration="$DURATION" "${args[@]}" -output="$tmp/vegeta.bin"
	"$vegeta" report -type=json "$tmp/vegeta.bin" >"$tmp/vegeta.json"
	if [ "$rate" != closed ]; then
		"$vegeta" encode --to csv "$tmp/vegeta.bin" | awk -F, -v gap="$(awk -v r="$rate" 'BEGIN{print 1e9/r}')" \
			'{printf "%.0f\n", $1 - $9*gap}' | sort -g >"$tmp/vlag"
		read -r l50 l99 < <(awk '{v[NR]=$1} END{if (NR) printf "%.6f %.6f\n", (v[int(NR*0.5)+1]-v[1])/1e6, (v[int(NR*0.99)+1]-v[1])/1e6}' "$tmp/vlag")
	fi
	jq -r --arg cpu "$(cat "$tmp/cpu")" --arg l50 "$l50" --arg l99 "$l99" '[.rate, .latencies["50th"]/1e6, .latencies["99th"]/1e6,
		($cpu|tonumber)*1e6/(.requests|if .==0 then 1 else . end), .success*100, $l50, $l99] | @tsv' "$tmp/vegeta.json"
}

# cloudinfer_run RATE: prints "sent/s p50ms p99ms cpu-us/req ok% lagp50 lagp99 late".
cloudinfer_run() {
	local rate=$1 args
	if [ "$rate" = closed ]; then
		args=(--load closed --concurrency "$CONNS")
	else
		args=(--load constant --rate "$rate")
	fi
	[ -n "$SPIN" ] && args+=("--send-spin=$SPIN")
	cpu_of "$cloudinfer" bench --provider openai --url "http://$ADDR" --model m --no-stream --prompt hello \
		--output-tokens 1 --duration "$DURATION" --warmup 1 --retries 0 --quiet "${args[@]}" \
		--format csv --out "$tmp/ci.json" >"$tmp/ci.csv" 2>"$tmp/ci.err" || { cat "$tmp/ci.err" >&2; return 1; }
	awk -F, -v cpu="$(cat "$tmp/cpu")" '
		$1=="load" && $5=="achieved" {rate=$7}
		$1=="load" && $5=="sent" {sent=$7}
		$1=="load" && $5=="late" {late=$7}
		$1=="counts" && $4=="all" && $5=="requests" {n=$7}
		$1=="counts" && $4=="all" && $5=="failed" {failed=$7}
		$1=="metric" && $4=="all" && $5=="e2e" && $6=="p50" {p50=$7}
		$1=="metric" && $4=="all" && $5=="e2e" && $6=="p99" {p99=$7}
		$1=="metric" && $4=="all" && $5=="schedule-lag" && $6=="p50" {l50=$7}
		$1=="metric" && $4=="all" && $5=="schedule-lag" && $6=="p99" {l99=$7}
		END {if (sent == 0) sent = 1; if (n == 0) n = 1
			printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\n", rate, p50, p99, cpu*1e6/sent, 100*(n-failed)/n,
				(l50 == "" ? "-" : l50), (l99 == "" ? "-" : l99), (late == "" ? "-" : late)}' "$tmp/ci.csv"
}

printf 'machine: %s, %s CPUs; load average before: %s\n' "$(uname -sm)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'cloudinfer %s; %s; loopserver -impl %s; duration %s each; closed loop: %s connections\n\n' \
	"${CLOUDINFER:-$(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?')}" "$VEGETA" "$SERVER" "$DURATION" "$CONNS"
printf '| offered | vegeta sent/s | vegeta p50 / p99 ms | vegeta lag p50 / p99 ms | vegeta CPU µs/req | cloudinfer sent/s | cloudinfer p50 / p99 ms | lag p50 / p99 ms | late | cloudinfer CPU µs/req |\n'
printf '|---|---|---|---|---|---|---|---|---|---|\n'
for rate in $RATES closed; do
	IFS=$'\t' read -r vr v50 v99 vcpu vok vl50 vl99 < <(vegeta_run "$rate")
	IFS=$'\t' read -r cr c50 c99 ccpu cok l50 l99 late < <(cloudinfer_run "$rate")
	label="$rate/s"
	if [ "$rate" = closed ]; then label="closed, $CONNS conns" l50=- l99=- late=-; fi
	printf '| %s | %.0f%s | %.2f / %.2f | %s / %s | %.0f | %.0f%s | %.2f / %.2f | %s / %s | %s | %.0f |\n' \
		"$label" "$vr" "$( [ "${vok%.*}" -lt 100 ] && printf ' (%.1f%% ok)' "$vok")" "$v50" "$v99" \
		"$( [ "$vl50" = - ] && echo - || printf '%.3f' "$vl50")" "$( [ "$vl99" = - ] && echo - || printf '%.3f' "$vl99")" "$vcpu" \
		"$cr" "$( [ "${cok%.*}" -lt 100 ] && printf ' (%.1f%% ok)' "$cok")" "$c50" "$c99" \
		"$( [ "$l50" = - ] && echo - || printf '%.3f' "$l50")" "$( [ "$l99" = - ] && echo - || printf '%.3f' "$l99")" "$late" "$ccpu"
done
printf '\nload average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
