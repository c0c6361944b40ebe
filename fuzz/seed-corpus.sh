#!/bin/sh
# Writes one seed file per llhttp request vector (raw_b64 decoded) into
# fuzz/corpus/parse_request/, and a few hand-made seeds for the semantics
# target into fuzz/corpus/semantics/. Needs only sed, base64 and printf.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
vectors="$here/../tests/data/http-vectors/llhttp-requests.jsonl"
out="$here/corpus/parse_request"
mkdir -p "$out"
n=0
sed -n 's/.*"raw_b64": *"\([^"]*\)".*/\1/p' "$vectors" | while read -r b64; do
    n=$((n + 1))
    printf '%s' "$b64" | base64 -d > "$out/llhttp-$(printf '%03d' "$n")"
done
echo "seeded $(ls "$out" | wc -l) files in $out"

# Semantics seeds: 8 bytes length (LE), 8 bytes mtime (LE), a selector byte,
# then fields separated by 0xFF: range or path, If-Match, If-None-Match,
# If-Modified-Since, If-Unmodified-Since, If-Range, ETag.
sem="$here/corpus/semantics"
mkdir -p "$sem"
len='\350\003\000\000\000\000\000\000'          # 1000
mtime='\045\177\223\145\000\000\000\000'        # 1704164645
date='Tue, 02 Jan 2024 03:04:05 GMT'
tag='"65937f25-3e8"'
seed() {
    printf "$len$mtime%b%b" "$1" "$2" > "$sem/$3"
}
seed '\001' "bytes=0-99,200-,-5\377$tag\377W/$tag\377$date\377$date\377$tag\377$tag" ranges
seed '\001' "bytes=0-0,0-0,1-1,5-9,3-6\377*\377*\377$date\377$date\377$date\377$tag" overlap
seed '\002' "bytes=-0, ,900-1999\377\"a\", $tag\377\"b\"\377Sunday, 06-Nov-94 08:49:37 GMT\377Sun Nov  6 08:49:37 1994\377W/$tag" suffix
seed '\000' "/a/./b/../%2e%2e/c/%2F/.hidden/?x=1&y=%00" path
seed '\000' "/.well-known/acme/../.git//config%00" dotfile
seed '\001' "/%c3%a9t%C3%A9/..%2f..%5c/%zz\377$tag\377$tag" escapes
echo "seeded $(ls "$sem" | wc -l) files in $sem"

# FastCGI seeds: a control byte (0: request id 1), then an application's
# answer: STDOUT, a management record, STDERR, STDOUT's end, END_REQUEST.
fcgi="$here/corpus/fastcgi"
mkdir -p "$fcgi"
printf '\000\001\006\000\001\000\021\007\000Status: 200\r\n\r\nhi\000\000\000\000\000\000\000\001\012\000\000\000\003\005\000abc\000\000\000\000\000\001\007\000\001\000\004\004\000warn\000\000\000\000\001\006\000\001\000\000\000\000\001\003\000\001\000\010\000\000\000\000\000\000\000\000\000\000' > "$fcgi/answer"
printf '\001SCRIPT_FILENAME\377/srv/www/index.php\377\376QUERY_STRING\377a=1\377\375body' > "$fcgi/pairs"

# ACME seeds: a CA's answers (a directory, an order, an authorization, a
# problem), the test certificates' DER for the X.509 reader, and a stored
# chain, a NUL, its PKCS#8 key (made with openssl, when there is one).
acme="$here/corpus/acme_answer"
mkdir -p "$acme"
printf 'HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 153\r\n\r\n{"newNonce":"https://ca.test/nonce","newAccount":"https://ca.test/acct","newOrder":"https://ca.test/order","renewalInfo":"https://ca.test/ari","meta":{}}' > "$acme/directory"
printf 'HTTP/1.1 201 Created\r\nReplay-Nonce: n1\r\nLocation: https://ca.test/order/1\r\nRetry-After: 3\r\nTransfer-Encoding: chunked\r\n\r\n92\r\n{"status":"pending","identifiers":[{"type":"dns","value":"a.test"}],"authorizations":["https://ca.test/authz/1"],"finalize":"https://ca.test/fin"}\r\n0\r\n\r\n' > "$acme/order"
printf '{"status":"pending","identifier":{"type":"dns","value":"a.test"},"challenges":[{"type":"http-01","url":"https://ca.test/ch/1","token":"tok"},{"type":"tls-alpn-01","url":"https://ca.test/ch/2","token":"tok2","error":{"type":"urn:ietf:params:acme:error:connection","detail":"refused"}}]}' > "$acme/authz"
printf 'HTTP/1.1 400 Bad Request\r\nLink: <https://ca.test/dir>;rel="index"\r\n\r\n{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"no","status":400,"subproblems":[{"type":"urn:ietf:params:acme:error:rejectedIdentifier","detail":"blocked","identifier":{"type":"dns","value":"x.test"}}]}' > "$acme/problem"
testdata="$here/../engine/src/tls/testdata"
x509="$here/corpus/x509"
mkdir -p "$x509"
for c in a b c ca expired; do
    sed '/-----/d' "$testdata/$c.pem" | base64 -d > "$x509/$c"
done
pem="$here/corpus/acme_pem"
mkdir -p "$pem"
if command -v openssl >/dev/null; then
    { cat "$testdata/a.pem" "$testdata/ca.pem"; printf '\000'; openssl pkcs8 -topk8 -nocrypt -in "$testdata/a.key"; } > "$pem/stored"
fi
echo "seeded $(ls "$acme" | wc -l) files in $acme, $(ls "$x509" | wc -l) in $x509, $(ls "$pem" | wc -l) in $pem"

# WebDAV seeds: a PROPFIND, a PROPPATCH with a namespaced value, a LOCK
# with an owner, an If header, a Destination.
dav="$here/corpus/webdav"
mkdir -p "$dav"
printf '<?xml version="1.0" encoding="utf-8"?>\n<D:propfind xmlns:D="DAV:"><D:prop><D:getetag/><x:a xmlns:x="urn:x"/></D:prop></D:propfind>' > "$dav/propfind"
printf '<D:propertyupdate xmlns:D="DAV:" xmlns:Z="urn:z"><D:set><D:prop><Z:a xml:lang="en">x &amp; <Z:b Z:c="1">y</Z:b><![CDATA[<z>]]></Z:a></D:prop></D:set><D:remove><D:prop><Z:d/></D:prop></D:remove></D:propertyupdate>' > "$dav/proppatch"
printf '<D:lockinfo xmlns:D="DAV:"><D:lockscope><D:exclusive/></D:lockscope><D:locktype><D:write/></D:locktype><D:owner><D:href>http://a/b</D:href></D:owner></D:lockinfo>' > "$dav/lock"
printf '</dav/a> (<urn:uuid:181d4fae-7d8c-11d0-a765-00a0c91e6bf2> ["e1"]) (Not <DAV:no-lock> W/"e2")' > "$dav/if"
printf 'http://localhost:80/dav/a%%20b/../c?q' > "$dav/destination"
echo "seeded $(ls "$dav" | wc -l) files in $dav"
