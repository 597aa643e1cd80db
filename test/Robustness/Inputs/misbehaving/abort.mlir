// MARKER_ABORT
func.func @f() {
  return
}
