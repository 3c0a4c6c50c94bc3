# Every GEMM of the nine Inception modules of paper 000, Table 6, in one launch (34 rows: modules 8 and 9
# repeat a shape each; the paper counts 33). M = 784, 196, 49 (28^2, 14^2, 7^2), K = 192: few sizes divide a tile.
target cuda sm_90

kernel inception_all {
  dtype f32
  batch {
    i1_0  784 x 96 x 192
    i1_1  784 x 64 x 192
    i1_2  784 x 32 x 192
    i1_3  784 x 16 x 192
    i2_0  784 x 64 x 192
    i2_1  784 x 32 x 192
    i2_2  784 x 128 x 192
    i3_0  196 x 192 x 192
    i3_1  196 x 16 x 192
    i3_2  196 x 96 x 192
    i3_3  196 x 64 x 192
    i4_0  196 x 64 x 192
    i4_1  196 x 24 x 192
    i4_2  196 x 160 x 192
    i5_0  196 x 64 x 192
    i5_1  196 x 128 x 192
    i5_2  196 x 24 x 192
    i6_0  196 x 112 x 192
    i6_1  196 x 144 x 192
    i6_2  196 x 32 x 192
    i6_3  196 x 64 x 192
    i7_0  196 x 256 x 192
    i7_1  196 x 160 x 192
    i7_2  196 x 128 x 192
    i8_0  49 x 160 x 192
    i8_1  49 x 128 x 192
    i8_2  49 x 256 x 192
    i8_3  49 x 160 x 192
    i8_4  49 x 32 x 192
    i9_0  49 x 192 x 192
    i9_1  49 x 128 x 192
    i9_2  49 x 384 x 192
    i9_3  49 x 192 x 192
    i9_4  49 x 48 x 192
  }
}
