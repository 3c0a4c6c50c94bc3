# Mixture-of-experts layers: batches sized at run time.
target cuda sm_90

kernel moe_up {                      # forward: tokens routed to 64 experts, rows of A stacked by expert
  dtype f32
  layout B col                       # B is experts x N x K (each expert's weight K x N, column-major)
  grouped M  n 2048  k 1024  groups 64  rows 32768
}

kernel moe_wgrad {                   # weight gradient: dW_e = X_e^T dY_e, tokens split by the same ends
  dtype f32
  layout A col                       # A is X^T: X is tokens x 1024, row-major
  grouped K  m 1024  n 2048  groups 64
}

kernel varlen {                      # any sizes, new ones every call
  dtype f64
  alpha runtime
  beta runtime
  grouped list  problems 512
}
