# A mixture-of-experts layer in bf16 on the Hopper TMA + wgmma loop (target cuda sm_90): tokens routed to 64 experts,
# the rows of A stacked by expert, the group ends on the device (torch._grouped_mm's convention).
target cuda sm_90

kernel moe_up_bf16 {
  dtype bf16
  layout B col                       # B is experts x N x K (each expert's weight K x N, column-major)
  grouped M  n 2048  k 1024  groups 64  rows 32768
}

kernel moe_down_bf16 {               # B row-major (experts x K x N), C in f32
  dtype A bf16, B bf16, C f32
  grouped M  n 1024  k 2048  groups 64
}

kernel moe_list_bf16 {               # independent problems of any sizes, new ones every call: each expert its own A, B, C
  dtype bf16
  layout B col
  grouped list problems 256
}
