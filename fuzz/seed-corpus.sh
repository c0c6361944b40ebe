#!/bin/sh
# Writes one seed file per llhttp request vector (raw_b64 decoded) into
# fuzz/corpus/parse_request/. Needs only sed and base64 (coreutils).
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
