# The nine Inception modules of paper 000, Table 6, one kernel each (gemmc/bench/irregular.py's per-module cases;
# examples/inception_all.gs runs all of them in one launch). Within a module the GEMMs share M (28^2, 14^2 or 7^2
# output positions) and K = 192; N is the module's output channels per branch. `tile auto` picks per problem.
target cuda sm_90

kernel module1 {
  dtype f32
  batch {
    b0  784 x 96 x 192
    b1  784 x 64 x 192
    b2  784 x 32 x 192
    b3  784 x 16 x 192
  }
  tile auto
  batching auto
}

kernel module2 {
  dtype f32
  batch {
    b0  784 x 64 x 192
    b1  784 x 32 x 192
    b2  784 x 128 x 192
  }
  tile auto
  batching auto
}

kernel module3 {
  dtype f32
  batch {
    b0  196 x 192 x 192
    b1  196 x 16 x 192
    b2  196 x 96 x 192
    b3  196 x 64 x 192
  }
  tile auto
  batching auto
}

kernel module4 {
  dtype f32
  batch {
    b0  196 x 64 x 192
    b1  196 x 24 x 192
    b2  196 x 160 x 192
  }
  tile auto
  batching auto
}

kernel module5 {
  dtype f32
  batch {
    b0  196 x 64 x 192
    b1  196 x 128 x 192
    b2  196 x 24 x 192
  }
  tile auto
  batching auto
}

kernel module6 {
  dtype f32
  batch {
    b0  196 x 112 x 192
    b1  196 x 144 x 192
    b2  196 x 32 x 192
    b3  196 x 64 x 192
  }
  tile auto
  batching auto
}

kernel module7 {
  dtype f32
  batch {
    b0  196 x 256 x 192
    b1  196 x 160 x 192
    b2  196 x 128 x 192
  }
  tile auto
  batching auto
}

kernel module8 {
  dtype f32
  batch {
    b0  49 x 160 x 192
    b1  49 x 128 x 192
    b2  49 x 256 x 192
    b3  49 x 160 x 192
    b4  49 x 32 x 192
  }
  tile auto
  batching auto
}

kernel module9 {
  dtype f32
  batch {
    b0  49 x 192 x 192
    b1  49 x 128 x 192
    b2  49 x 384 x 192
    b3  49 x 192 x 192
    b4  49 x 48 x 192
  }
  tile auto
  batching auto
}
