// MARKER_ASAN
func.func @f() {
  return
}
