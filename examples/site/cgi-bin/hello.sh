#!/bin/sh
printf 'Content-Type: text/plain\r\n\r\n'
printf 'hello from %s, asked for %s\n' "$SERVER_SOFTWARE" "$REQUEST_URI"
