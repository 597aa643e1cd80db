// MARKER_EXIT3
func.func @f() {
  return
}
