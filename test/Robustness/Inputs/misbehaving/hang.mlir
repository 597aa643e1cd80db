// MARKER_HANG
func.func @f() {
  return
}
