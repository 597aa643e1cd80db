// MARKER_SEGV
func.func @f() {
  return
}
