# One mixture-of-experts linear layer in bf16, forward and backward (docs/tutorial.md, section 7): tokens x in_features
# activations routed to 8 experts, each expert an nn.Linear(512, 1024) weight, the weights stacked experts x 1024 x 512,
# the tokens' rows sorted by expert and the int32 group ends on the device.
target cuda sm_90

kernel moe_fwd {                     # y = x W_e^T for expert e's rows
  dtype bf16
  layout B col                       # B: the weights as stored, experts x out x in (each W_e^T column-major)
  grouped M  n 1024  k 512  groups 8  rows 4096
}

kernel moe_dx {                      # dx = dy W_e
  dtype bf16
  grouped M  n 512  k 1024  groups 8  rows 4096
}

kernel moe_dw {                      # dW_e = dy_e^T x_e, the tokens split by the same ends
  dtype bf16
  layout A col                       # A is dy^T: dy is tokens x out, row-major
  grouped K  m 1024  n 512  groups 8
}
