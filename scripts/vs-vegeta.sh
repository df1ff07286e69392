#!/usr/bin/env bash
# vs-vegeta.sh: cloudinfer bench beside vegeta v12.13.0 on this machine,
# against one minimal loopback server (scripts/loopserver: a fixed,
# non-streamed chat completion answered at once), at constant rates and
# in a closed loop, and prints one table. CI does not run it: it takes a
# minute or two, and its figures are the machine's. Run it on a quiet
# machine; the load average is printed beside the table, and each row's
# share of CPU time the hypervisor took from the machine (steal) beside
# it.
#
#   scripts/vs-vegeta.sh                     # 1000 4000 8000 12000 req/s, 10 s each
#   RATES="1000 2000" DURATION=5s scripts/vs-vegeta.sh
#   ROUNDS=3 scripts/vs-vegeta.sh            # each row the median of 3 runs of each
#   LATE_AFTER=5ms scripts/vs-vegeta.sh      # a send this late counts as late (default 10ms)
#   CONNS=64 ADDR=127.0.0.1:18080 SPIN=100us scripts/vs-vegeta.sh
#   SPIN=-1ns scripts/vs-vegeta.sh           # no spin: the runtime's timer alone
#   CLOUDINFER=/path/to/cloudinfer scripts/vs-vegeta.sh   # another build
#   SERVER=nethttp scripts/vs-vegeta.sh      # net/http's server, not the lean one
#
# vegeta is installed with `go install` into a temporary GOBIN (it is not
# a module dependency). CPU per request is the generator process's user +
# system time over the requests it sent (bash's `times` of the child).
# vegeta's schedule lag is read from its results (see vegeta_run), so the
# two generators' lag and late columns compare. A generator is on time at
# a rate when it sent at least 99% of it, fewer than 1% of its sends were
# late, and its lag p99 was under 1 ms.
#
# With ROUNDS=N each rate runs N times, the two generators alternating
# which goes first, and each figure is the median of the N (the lag p99's
# range beside it): one run on a shared machine can meet a stall of tens
# of milliseconds that the next does not.
set -euo pipefail

RATES=${RATES:-"1000 4000 8000 12000"}
DURATION=${DURATION:-10s}
CONNS=${CONNS:-64}
ADDR=${ADDR:-127.0.0.1:18080}
SPIN=${SPIN:-} # cloudinfer's --send-spin; empty: its default
SERVER=${SERVER:-lean} # loopserver's -impl: lean or nethttp
VEGETA=${VEGETA:-github.com/tsenart/vegeta/v12@v12.13.0}
ROUNDS=${ROUNDS:-1}
LATE_AFTER=${LATE_AFTER:-10ms}
case $ROUNDS in '' | *[!0-9]* | 0) echo "ROUNDS=$ROUNDS: want a whole number of runs, 1 or more" >&2; exit 2 ;; esac

# late_ns: LATE_AFTER in nanoseconds, for vegeta's late count (the forms
# cloudinfer's --late-after takes: a number and ns, us, µs, ms or s).
late_ns=$(awk -v d="$LATE_AFTER" 'BEGIN{
	n = d + 0; u = substr(d, length(n "") + 1)
	f["ns"]=1; f["us"]=1e3; f["µs"]=1e3; f["ms"]=1e6; f["s"]=1e9
	if (!(u in f) || n <= 0) exit 1
	printf "%.0f\n", n * f[u]}') || { echo "LATE_AFTER=$LATE_AFTER: want a duration such as 10ms" >&2; exit 2; }

# secs: DURATION in seconds, for the late share (one number and ms, s or m).
secs=$(awk -v d="$DURATION" 'BEGIN{n = d + 0; u = substr(d, length(n "") + 1); f["ms"]=1e-3; f["s"]=1; f["m"]=60
	if (!(u in f) || n <= 0) exit 1
	print n * f[u]}') || { echo "DURATION=$DURATION: want one number and a unit (ms, s or m), such as 10s" >&2; exit 2; }

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

# vegeta_run RATE: prints "sent/s p50ms p99ms cpu-us/req ok% lagp50 lagp99 late".
# vegeta reports no schedule lag: it is read from its hits' timestamps
# (when each hit began) against its constant pacer's schedule (hit n due
# n/RATE after the first), with its least lag taken as 0; late counts the
# hits whose lag passes LATE_AFTER, as cloudinfer's --late-after does.
vegeta_run() {
	local rate=$1 args l50=- l99=- late=-
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
		read -r l50 l99 late < <(awk -v after="$late_ns" '{v[NR]=$1} END{if (NR) {n=0; for (i=1; i<=NR; i++) if (v[i]-v[1] > after) n++
			printf "%.6f %.6f %d\n", (v[int(NR*0.5)+1]-v[1])/1e6, (v[int(NR*0.99)+1]-v[1])/1e6, n}}' "$tmp/vlag")
	fi
	jq -r --arg cpu "$(cat "$tmp/cpu")" --arg l50 "$l50" --arg l99 "$l99" --arg late "$late" '[.rate, .latencies["50th"]/1e6, .latencies["99th"]/1e6,
		($cpu|tonumber)*1e6/(.requests|if .==0 then 1 else . end), .success*100, $l50, $l99, $late] | @tsv' "$tmp/vegeta.json"
}

# cloudinfer_run RATE: prints "sent/s p50ms p99ms cpu-us/req ok% lagp50 lagp99 late".
cloudinfer_run() {
	local rate=$1 args
	if [ "$rate" = closed ]; then
		args=(--load closed --concurrency "$CONNS")
	else
		args=(--load constant --rate "$rate" --late-after "$LATE_AFTER")
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

# steal_total: the machine's CPU ticks in all and those stolen by the
# hypervisor so far (/proc/stat's first line).
steal_total() { awk '$1=="cpu"{t=0; for (i=2; i<=NF; i++) t+=$i; print t, $9; exit}' /proc/stat; }

# median FILE: each tab-separated column's median over FILE's lines (a
# column of "-" stays "-"), and, last, the range of column 7 (lag p99).
median() {
	awk -F'\t' '{for (i=1; i<=NF; i++) v[i, NR]=$i; nf=NF} END{
		for (i=1; i<=nf; i++) {
			m=0; for (r=1; r<=NR; r++) if (v[i, r] != "-") a[++m]=v[i, r]+0
			for (x=2; x<=m; x++) {t=a[x]; for (y=x-1; y>=1 && a[y]>t; y--) a[y+1]=a[y]; a[y+1]=t}
			med = (m == 0 ? "-" : (m % 2 ? a[(m+1)/2] : (a[m/2] + a[m/2+1]) / 2))
			if (i == 7) {lo = (m ? a[1] : "-"); hi = (m ? a[m] : "-")}
			printf "%s\t", med
		}
		printf "%s\t%s\n", lo, hi}' "$1"
}

# on_time RATE SENT/S LATE LAG99 SECONDS: "yes" when the generator sent
# at least 99% of RATE, fewer than 1% of its sends were late and its lag
# p99 was under 1 ms (its sends counted as SENT/S times SECONDS); else
# "no".
on_time() {
	awk -v r="$1" -v sent="$2" -v late="$3" -v l99="$4" -v secs="$5" 'BEGIN{
		n = sent * secs; ok = (sent >= 0.99 * r && l99 != "-" && l99 < 1 && (late == "-" || late < 0.01 * n))
		print (ok ? "yes" : "no")}'
}

# lag_range LO HI: " (lo–hi)" when there were rounds to range over.
lag_range() { [ "$ROUNDS" -gt 1 ] && [ "$1" != - ] && printf ' (%.3f–%.3f)' "$1" "$2" || true; }

printf 'machine: %s, %s CPUs; load average before: %s\n' "$(uname -sm)" "$(nproc)" "$(cut -d' ' -f1-3 /proc/loadavg)"
printf 'cloudinfer %s; %s; loopserver -impl %s; duration %s each, %s round(s), median shown; late: lag over %s; closed loop: %s connections\n' \
	"${CLOUDINFER:-$(cd "$root" && git describe --always --dirty 2>/dev/null || echo '?')}" "$VEGETA" "$SERVER" "$DURATION" "$ROUNDS" "$LATE_AFTER" "$CONNS"
printf 'on time: sent >= 99%% of the rate, late < 1%% of sends, lag p99 < 1 ms\n\n'
printf '| offered | vegeta sent/s | vegeta p50 / p99 ms | vegeta lag p50 / p99 ms | vegeta late | vegeta CPU µs/req | cloudinfer sent/s | cloudinfer p50 / p99 ms | lag p50 / p99 ms | late | cloudinfer CPU µs/req | on time (vegeta / cloudinfer) | steal |\n'
printf '|---|---|---|---|---|---|---|---|---|---|---|---|---|\n'
for rate in $RATES closed; do
	: >"$tmp/v.tsv"
	: >"$tmp/c.tsv"
	read -r t0 s0 < <(steal_total)
	for round in $(seq "$ROUNDS"); do
		# Alternate which goes first, so that neither always runs on the
		# machine the other has just warmed (or heated).
		if [ $((round % 2)) -eq 1 ]; then
			vegeta_run "$rate" >>"$tmp/v.tsv"
			cloudinfer_run "$rate" >>"$tmp/c.tsv"
		else
			cloudinfer_run "$rate" >>"$tmp/c.tsv"
			vegeta_run "$rate" >>"$tmp/v.tsv"
		fi
	done
	read -r t1 s1 < <(steal_total)
	steal=$(awk -v t="$((t1 - t0))" -v s="$((s1 - s0))" 'BEGIN{printf "%.1f%%", (t > 0 ? 100 * s / t : 0)}')
	IFS=$'\t' read -r vr v50 v99 vcpu vok vl50 vl99 vlate vlo vhi < <(median "$tmp/v.tsv")
	IFS=$'\t' read -r cr c50 c99 ccpu cok l50 l99 late clo chi < <(median "$tmp/c.tsv")
	label="$rate/s" vt=- ct=-
	if [ "$rate" = closed ]; then
		label="closed, $CONNS conns" l50=- l99=- late=- vl50=- vl99=- vlate=-
	else
		vt=$(on_time "$rate" "$vr" "$vlate" "$vl99" "$secs")
		ct=$(on_time "$rate" "$cr" "$late" "$l99" "$secs")
	fi
	printf '| %s | %.0f%s | %.2f / %.2f | %s / %s%s | %s | %.0f | %.0f%s | %.2f / %.2f | %s / %s%s | %s | %.0f | %s / %s | %s |\n' \
		"$label" "$vr" "$( [ "${vok%.*}" -lt 100 ] && printf ' (%.1f%% ok)' "$vok")" "$v50" "$v99" \
		"$( [ "$vl50" = - ] && echo - || printf '%.3f' "$vl50")" "$( [ "$vl99" = - ] && echo - || printf '%.3f' "$vl99")" \
		"$( [ "$rate" = closed ] || lag_range "$vlo" "$vhi")" "$( [ "$vlate" = - ] && echo - || printf '%.0f' "$vlate")" "$vcpu" \
		"$cr" "$( [ "${cok%.*}" -lt 100 ] && printf ' (%.1f%% ok)' "$cok")" "$c50" "$c99" \
		"$( [ "$l50" = - ] && echo - || printf '%.3f' "$l50")" "$( [ "$l99" = - ] && echo - || printf '%.3f' "$l99")" \
		"$( [ "$rate" = closed ] || lag_range "$clo" "$chi")" "$( [ "$late" = - ] && echo - || printf '%.0f' "$late")" "$ccpu" \
		"$vt" "$ct" "$steal"
done
printf '\nload average after: %s\n' "$(cut -d' ' -f1-3 /proc/loadavg)"
