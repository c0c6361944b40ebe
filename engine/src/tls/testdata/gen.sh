#!/usr/bin/env bash
# Makes the test certificates of engine/src/tls (run once; the files are checked
# in, so the tests need no openssl). A private CA signs them; "valid" ones
# last until 2126 (a GeneralizedTime notAfter), the expired one ended in
# 2021 (made with `openssl ca`, which takes explicit dates).
set -euo pipefail
cd "$(dirname "$0")"
rm -rf ca.d && mkdir -p ca.d/new && : > ca.d/index.txt && echo 01 > ca.d/serial
cat > ca.d/ca.cnf <<'CNF'
[ca]
default_ca = test
[test]
database = ca.d/index.txt
serial = ca.d/serial
new_certs_dir = ca.d/new
default_md = sha256
policy = any
copy_extensions = copy
unique_subject = no
[any]
commonName = supplied
CNF
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 36500 \
  -subj "/CN=brisk test CA" -keyout ca.key -out ca.pem 2>/dev/null
# name, key-generation options, key output form, SAN, start, end
leaf() {
  local name=$1 san=$2 start=$3 end=$4; shift 4
  openssl genpkey "$@" -out "$name.pkcs8" 2>/dev/null
  openssl req -new -key "$name.pkcs8" -subj "/CN=$name" -addext "subjectAltName=$san" -out "$name.csr"
  openssl ca -batch -config ca.d/ca.cnf -cert ca.pem -keyfile ca.key -in "$name.csr" \
    -startdate "$start" -enddate "$end" -notext -out "$name.leaf" 2>/dev/null
  cat "$name.leaf" ca.pem > "$name.pem"
  rm -f "$name.csr" "$name.leaf"
}
# a: ECDSA P-256, SEC1 key ("EC PRIVATE KEY").
leaf a "DNS:a.test,DNS:*.a.test" 20200101000000Z 21260101000000Z -algorithm EC -pkeyopt ec_paramgen_curve:P-256
openssl ec -in a.pkcs8 -out a.key 2>/dev/null
# b: RSA 2048, PKCS#1 key ("RSA PRIVATE KEY").
leaf b "DNS:b.test" 20200101000000Z 21260101000000Z -algorithm RSA -pkeyopt rsa_keygen_bits:2048
openssl rsa -in b.pkcs8 -traditional -out b.key 2>/dev/null
# c: Ed25519, PKCS#8 key ("PRIVATE KEY").
leaf c "DNS:c.test" 20200101000000Z 21260101000000Z -algorithm ED25519
cp c.pkcs8 c.key
# expired: ended on 2021-01-01.
leaf expired "DNS:expired.test" 20200101000000Z 20210101000000Z -algorithm EC -pkeyopt ec_paramgen_curve:P-256
cp expired.pkcs8 expired.key
rm -f ./*.pkcs8
rm -rf ca.d
