decode.model @m attributes {config = {vocab_size = 4 : i64}} {
  decode.weight @w : tensor<4xf32>
  func.func @step( {
}
