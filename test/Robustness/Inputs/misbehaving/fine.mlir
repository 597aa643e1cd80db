func.func @fine() {
  return
}
