// A rotation no attention reads (RUN line in ../rotary.mlir).
func.func @alone(%q: tensor<?x128xbf16>) -> tensor<?x128xbf16> {
  %0 = norm.rotary <neox> %q {num_heads = 1 : i64, head_dim = 128 : i64, rope_theta = 1.0e+04 : f64} : tensor<?x128xbf16>
  return %0 : tensor<?x128xbf16>
}
