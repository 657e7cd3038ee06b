# cmd/tests/memory_bounds.sh -- what reading a hostile image may cost in
# memory (formats/image.md, "Limits"): hostile_images.sh's matrix alone,
# every command on every hostile image under an address-space limit and a
# peak-RSS bound.  Outside suite 'slow', so that scripts/test measures it in
# its plain build; a sanitizer build skips it (RSS there is the sanitizers'
# shadow memory), and runs the rest of hostile_images.sh.
HOSTILE_PART=memory
. "$SRCROOT/cmd/tests/hostile_images.sh"
