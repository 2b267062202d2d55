#!/bin/sh
# Writes a throwaway CA and a certificate for `localhost` / 127.0.0.1 signed by it, for
# examples/tls.yaml: ca.pem, server.pem, server-key.pem in this directory (git ignores them).
# Demo material only: never use these keys for anything real.
set -eu
cd "$(dirname "$0")"
openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj '/CN=prx example CA' -keyout ca-key.pem -out ca.pem 2>/dev/null
openssl req -newkey rsa:2048 -nodes -subj '/CN=localhost' -keyout server-key.pem -out server.csr 2>/dev/null
printf 'subjectAltName=DNS:localhost,IP:127.0.0.1\n' > san.ext
openssl x509 -req -in server.csr -CA ca.pem -CAkey ca-key.pem -CAcreateserial -days 30 -extfile san.ext -out server.pem 2>/dev/null
rm -f server.csr san.ext ca.srl
echo "wrote $(pwd)/ca.pem, server.pem, server-key.pem"
