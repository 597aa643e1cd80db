#!/bin/sh
# Stands in for norm-opt in self-check.test: reads the input from stdin and
# misbehaves in the way a marker in it asks for.
input=$(cat)
case "$input" in
  *MARKER_SEGV*) kill -SEGV $$ ;;
  *MARKER_ABORT*) kill -ABRT $$ ;;
  *MARKER_HANG*) exec sleep 20 ;;
  *MARKER_EXIT3*) exit 3 ;;
  *MARKER_ASAN*) echo "==1==ERROR: AddressSanitizer: heap-use-after-free" >&2; exit 1 ;;
esac
exit 1
