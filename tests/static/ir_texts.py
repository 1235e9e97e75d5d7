"""IR texts the parser tests and the parser fuzzer both start from."""

# the design's example: a loss over two vectors
LOSS = """func @loss(%x: f32[1024], %w: f32[1024]) -> f32[] {
  %0 = mul %x, %x : f32[1024]
  %1 = tanh %0 : f32[1024]
  %2 = mul %1, %w : f32[1024]
  %3 = sum %2 {dims = [0], keepdim = false} : f32[]
  return %3
}"""

# literals of every kind, as operands and attributes
LITERALS = """func @lits(%x: f64[2,3], %i: i64[2]) -> (f64[2,3], f64[2,3], f64[3], bool[2,3]) {
  %0 = add %x, -2.5e-07 : f64[2,3]
  %1 = clamp %0 {max = inf, min = -inf} : f64[2,3]
  %2 = index %1, %i {key = [["tensor", 0], ["slice", none, 3, 1]], n_index = 1} : f64[2,3]
  %3 = sum %2 {dims = [0], keepdim = false} : f64[3]
  %4 = gt %2, 0 : bool[2,3]
  return %0, %2, %3, %4
}"""
