#!/usr/bin/env bash
# Smoke test of tools/testserver/server.js with curl: files, ranges, faults,
# statistics, and that the server exits when its stdin closes or on SIGTERM.
#
# usage: bash tools/testserver/smoke.sh      (needs node and curl)
# Prints one line per check and "smoke: N passed, M failed"; exit status 1
# when a check failed.
set -uo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
server="$here/server.js"
tmp=$(mktemp -d)
pid=
cleanup() {
  [ -n "$pid" ] && kill "$pid" 2>/dev/null
  rm -rf "$tmp"
}
trap cleanup EXIT

pass=0; fail=0
check() {  # check "what" command...
  local what=$1; shift
  if "$@"; then pass=$((pass + 1)); printf 'ok    %s\n' "$what"
  else fail=$((fail + 1)); printf 'FAIL  %s\n' "$what"; fi
}

# ---- a root with a 100-byte file (bytes 0..99), a directory, a UTF-8 name
root="$tmp/root"
mkdir -p "$root/dir" "$root/名 with space"
node -e 'process.stdout.write(Buffer.from([...Array(100).keys()]))' >"$root/a.bin"
printf 'x' >"$root/dir/x"
printf 'hello' >"$root/名 with space/f.txt"
: >"$root/empty"

start_server() {
  mkfifo "$tmp/in.$1"
  node "$server" --root "$root" <"$tmp/in.$1" >"$tmp/out.$1" 2>"$tmp/err.$1" &
  pid=$!
  exec 3>"$tmp/in.$1"   # the server's stdin stays open while fd 3 is
  for _ in $(seq 100); do
    grep -q '^listening ' "$tmp/out.$1" 2>/dev/null && break
    sleep 0.05
  done
  port=$(sed -n 's/^listening \([0-9]*\)$/\1/p' "$tmp/out.$1")
  [ -n "$port" ] || { echo "server did not start:"; cat "$tmp/err.$1"; exit 1; }
  base="http://127.0.0.1:$port"
}
start_server 1
check "prints exactly 'listening <port>'" test "$(cat "$tmp/out.1")" = "listening $port"

# get URL [curl args...]: body into $tmp/body, headers into $tmp/hdr, status in $code
get() {
  local url=$1; shift
  code=$(curl -s -o "$tmp/body" -D "$tmp/hdr" -w '%{http_code}' "$@" "$url")
  rc=$?
}
hdr() { grep -i "^$1:" "$tmp/hdr" | tail -n 1 | sed 's/^[^:]*: *//' | tr -d '\r'; }
body_is() { node -e '
  const b = require("fs").readFileSync(process.argv[1]);
  const want = JSON.parse(process.argv[2]);
  process.exit(b.length === want.length && want.every((v, i) => b[i] === v) ? 0 : 1);' "$tmp/body" "$1"; }
seq_json() { node -e 'const [a, b] = process.argv.slice(1).map(Number);
  console.log(JSON.stringify(Array.from({length: b - a + 1}, (_, i) => a + i)))' "$1" "$2"; }
stats() { curl -s "$base/_stats"; }
jsget() { node -e 'let s = ""; process.stdin.on("data", d => s += d).on("end", () => {
  const v = JSON.parse(s); console.log(JSON.stringify(eval(process.argv[1]))); });' "$1"; }

# ---- files
get "$base/a.bin"
check "GET a file: 200, the whole file" test "$code" = 200 -a "$(hdr content-length)" = 100
check "  body is bytes 0..99" body_is "$(seq_json 0 99)"
check "  Accept-Ranges: bytes" test "$(hdr accept-ranges)" = bytes
check "  keep-alive (HTTP/1.1, no Connection: close)" test "$(hdr connection)" != close
etag=$(hdr etag)
check "  an ETag" test -n "$etag"
get "$base/a.bin" -H "If-Match: $etag"
check "If-Match with the ETag: 200" test "$code" = 200
get "$base/a.bin" -H "If-Match: $(echo "$etag" | tr -d '"')"
check "  unquoted too" test "$code" = 200
get "$base/a.bin" -H 'If-Match: "other"'
check "If-Match with another ETag: 412" test "$code" = 412
get "$base/%E5%90%8D%20with%20space/f.txt"
check "UTF-8 name with spaces, percent-encoded" test "$code" = 200 -a "$(cat "$tmp/body")" = hello
get "$base/a.bin?sig=abc&exp=1"
check "a query string is ignored for the lookup" test "$code" = 200
get "$base/missing";          check "missing file: 404" test "$code" = 404
get "$base/dir";              check "directory: 404 (no listing)" test "$code" = 404
get "$base/dir/";             check "directory with slash: 404" test "$code" = 404
get "$base/";                 check "root: 404" test "$code" = 404
get "$base/dir//x";           check "empty segment: 404" test "$code" = 404
get "$base/dir/x/";           check "file with a trailing slash: 404" test "$code" = 404
get "$base/../a.bin" --path-as-is;       check "'..' refused (400)" test "$code" = 400
get "$base/dir/%2E%2E/a.bin";            check "encoded '..' refused (400)" test "$code" = 400
get "$base/dir%2F..%2F..%2Fetc%2Fpasswd"; check "encoded slash refused (400)" test "$code" = 400
get "$base/%ZZ";                         check "bad percent-encoding: 400" test "$code" = 400
get "$base/a.bin" -I;         check "HEAD: 405" test "$code" = 405 -a "$(hdr allow)" = GET
get "$base/a.bin" -X POST;    check "POST: 405" test "$code" = 405
get "$base/a.bin" --http2;    check "an h2c upgrade offer is answered in HTTP/1.1" test "$code" = 200

# ---- ranges
get "$base/a.bin" -H 'Range: bytes=10-19'
check "bytes=10-19: 206" test "$code" = 206 -a "$(hdr content-range)" = "bytes 10-19/100" -a "$(hdr content-length)" = 10
check "  body is bytes 10..19" body_is "$(seq_json 10 19)"
get "$base/a.bin" -H 'Range: bytes=90-'
check "bytes=90-: 206 90-99/100" test "$code" = 206 -a "$(hdr content-range)" = "bytes 90-99/100"
check "  body is bytes 90..99" body_is "$(seq_json 90 99)"
get "$base/a.bin" -H 'Range: bytes=95-1000'
check "bytes=95-1000: clipped to 95-99" test "$code" = 206 -a "$(hdr content-range)" = "bytes 95-99/100"
get "$base/a.bin" -H 'Range: bytes=-5'
check "bytes=-5: 206 95-99/100" test "$code" = 206 -a "$(hdr content-range)" = "bytes 95-99/100"
check "  body is bytes 95..99" body_is "$(seq_json 95 99)"
get "$base/a.bin" -H 'Range: bytes=-500'
check "bytes=-500: the whole file as 0-99" test "$code" = 206 -a "$(hdr content-range)" = "bytes 0-99/100"
get "$base/a.bin" -H 'Range: bytes=100-'
check "bytes=100-: 416, Content-Range bytes */100" test "$code" = 416 -a "$(hdr content-range)" = "bytes */100"
get "$base/a.bin" -H 'Range: bytes=-0'
check "bytes=-0: 416" test "$code" = 416
get "$base/a.bin" -H 'Range: bytes=5-2'
check "bytes=5-2 (invalid): ignored, 200" test "$code" = 200 -a "$(hdr content-length)" = 100
get "$base/a.bin" -H 'Range: bytes=0-1,5-6'
check "two ranges: ignored, 200" test "$code" = 200
get "$base/a.bin" -H 'Range: items=0-1'
check "another unit: ignored, 200" test "$code" = 200
get "$base/empty" -H 'Range: bytes=0-'
check "empty file, bytes=0-: 416" test "$code" = 416 -a "$(hdr content-range)" = "bytes */0"

# ---- faults
curl -s "$base/_reset" >/dev/null
t=$(curl -s -o /dev/null -w '%{time_total}' "$base/latency=300/a.bin")
check "latency=300 delays the answer ($t s)" node -e "process.exit($t >= 0.3 ? 0 : 1)"
codes=""
for _ in 1 2 3 4 5 6; do get "$base/fail=3/a.bin"; codes="$codes$code "; done
check "fail=3: every 3rd request is 503 ($codes)" test "$codes" = "200 200 503 200 200 503 "
get "$base/fail=2,status=500,retryafter=7/a.bin"
get "$base/fail=2,status=500,retryafter=7/a.bin"
check "fail=2,status=500,retryafter=7: 500 with Retry-After: 7" test "$code" = 500 -a "$(hdr retry-after)" = 7
get "$base/fail429=1/a.bin"
check "fail429=1: 429 at once" test "$code" = 429
get "$base/truncate=1/a.bin"
check "truncate=1: the transfer breaks (curl exit $rc)" test "$rc" = 18
check "  after half the body" test "$(wc -c <"$tmp/body")" = 50
get "$base/truncate=1/a.bin" -H 'Range: bytes=10-29'
check "truncate=1 on a range: 10 of 20 bytes" test "$rc" = 18 -a "$(wc -c <"$tmp/body")" = 10
get "$base/norange=1/a.bin" -H 'Range: bytes=10-19'
check "norange=1: 200 with the whole file" test "$code" = 200 -a "$(hdr content-length)" = 100
codes=""
for _ in 1 2; do get "$base/badrange=2/a.bin" -H 'Range: bytes=10-19'; codes="$codes$(hdr content-range);"; done
check "badrange=2: the 2nd range claims a wrong start ($codes)" test "$codes" = "bytes 10-19/100;bytes 9-18/100;"
check "  with the right body" body_is "$(seq_json 10 19)"
get "$base/badrange=1/a.bin" -H 'Range: bytes=-5'
check "badrange=1 on a suffix range: start moved" test "$(hdr content-range)" = "bytes 94-98/100"
get "$base/hang=1/a.bin" --max-time 1
check "hang=1: no answer (curl exit $rc: timeout)" test "$rc" = 28
get "$base/notfound=%5E%2Fa/a.bin";  check "notfound=^/a: /a.bin 404" test "$code" = 404
get "$base/notfound=%5E%2Fa/dir/x";  check "notfound=^/a: /dir/x 200" test "$code" = 200
get "$base/notfound=%5E%2Fdir%2F/dir/x"; check "notfound with an encoded '/': 404" test "$code" = 404
get "$base/only=x%24,fail=1/a.bin"; check "only=x\$,fail=1: /a.bin 200" test "$code" = 200
get "$base/only=x%24,fail=1/dir/x"; check "only=x\$,fail=1: /dir/x 503" test "$code" = 503
get "$base/bogus=1/a.bin";         check "unknown fault option: 400" test "$code" = 400
get "$base/latency=5/%E5%90%8D%20with%20space/f.txt"
check "profile + UTF-8 path" test "$code" = 200 -a "$(cat "$tmp/body")" = hello

# ---- statistics
s=$(stats)
check "stats: requests counted (HEAD/POST included, control endpoints not)" \
  test "$(echo "$s" | jsget 'v.requests')" = "$(echo "$s" | jsget 'v.log.length')"
check "stats: the hung request is logged with status 0" \
  test "$(echo "$s" | jsget 'v.log.filter(e => e.path === "/hang=1/a.bin").map(e => e.status)')" = "[0]"
check "stats: the decoded path is logged" \
  test "$(echo "$s" | jsget 'v.log.filter(e => e.path.includes("名 with space")).length')" = 1
check "stats: truncated body bytes counted as sent" \
  test "$(echo "$s" | jsget 'v.log.filter(e => e.fault === "truncate").map(e => e.bytes)')" = "[50,10]"
curl -s "$base/_reset" >/dev/null
s=$(stats)
check "_reset clears everything" test "$(echo "$s" | jsget '[v.requests, v.bytes, v.connections, v.log.length]')" = "[0,0,0,0]"
curl -s -o /dev/null "$base/a.bin?sig=abc&exp=1" --next -s -o /dev/null -H 'Range: bytes=-10' "$base/a.bin"
curl -s -o /dev/null -I "$base/dir/x"
s=$(stats)
check "two requests on one connection + one HEAD: 3 requests, 2 connections" \
  test "$(echo "$s" | jsget '[v.requests, v.connections]')" = "[3,2]"
check "bytes = body bytes sent (100 + 10)" test "$(echo "$s" | jsget 'v.bytes')" = 110
check "methods counted" test "$(echo "$s" | jsget 'v.methods')" = '{"GET":2,"HEAD":1}'
check "query and range logged" \
  test "$(echo "$s" | jsget 'v.log.map(e => [e.query, e.range, e.status])')" = '[["sig=abc&exp=1",null,200],["","bytes=-10",206],["",null,405]]'

# ---- exits when stdin closes
exec 3>&-
ok=1
for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || { ok=0; break; }; sleep 0.05; done
check "exits when its stdin closes" test "$ok" = 0
wait "$pid" 2>/dev/null; pid=

# ---- and on SIGTERM, with stdin still open
start_server 2
kill -TERM "$pid"
ok=1
for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || { ok=0; break; }; sleep 0.05; done
check "exits on SIGTERM" test "$ok" = 0
wait "$pid" 2>/dev/null; pid=
exec 3>&-

# ---- with stdin not a pipe (/dev/null): stays up, stops on SIGTERM
node "$server" --root "$root" </dev/null >"$tmp/out.3" 2>&1 &
pid=$!
sleep 0.5
check "with stdin from /dev/null it stays up" kill -0 "$pid"
check "  and answers" test "$(curl -s -o /dev/null -w '%{http_code}' "http://127.0.0.1:$(sed -n 's/^listening //p' "$tmp/out.3")/a.bin")" = 200
kill -TERM "$pid"
ok=1
for _ in $(seq 40); do kill -0 "$pid" 2>/dev/null || { ok=0; break; }; sleep 0.05; done
check "  and exits on SIGTERM" test "$ok" = 0
wait "$pid" 2>/dev/null; pid=

# ---- refuses a non-loopback address
node "$server" --root "$root" --host 0.0.0.0 </dev/null >/dev/null 2>&1
check "refuses --host 0.0.0.0" test $? = 2

echo "smoke: $pass passed, $fail failed"
[ "$fail" -eq 0 ]
