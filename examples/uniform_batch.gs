# A uniform strided batch: 64 independent 512^3 GEMMs in one launch (3-D arrays from Python).
kernel batch512 {
  dtype f32
  gemm  512 x 512 x 512 count 64
  tile  128x128x8
  threads 256
}
