// What the training-free converters share (model/mla_convert.h: the latent as the top
// eigenvectors of a Gram matrix; model/kv_head_merge.h: the orthogonal polar factor that aligns
// one head's values with another's): a tensor's values in float32, and small dense linear algebra
// in double.
#pragma once

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "gguf/gguf_file.h"
#include "gguf/gguf_writer.h"
#include "tensor/ggml_type.h"

namespace fluoro {

// Calibration: per layer, the Gram matrix of the attention's input rows over a text — the
// attn_norm output x (n_embd values) extended by a constant 1 (so a bias is one more weight
// column), sum of xᵀx over the tokens divided by their count: (n_embd + 1)² doubles, row-major.
// A projection's error ΔW then costs ΔW C ΔWᵀ on that text, the metric the converters fit in.
struct AttnInputGram {
    int64_t n_embd = 0, tokens = 0;
    std::vector<std::vector<double>> layers;
};

// Throws Error naming `where` unless the calibration is of n_embd inputs over n_layer layers,
// each a (n_embd + 1)² matrix. Nothing to check for a null calibration.
void check_calibration(const AttnInputGram* cal, int64_t n_embd, int64_t n_layer,
                       const std::string& where);

// Adds a matrix the converter computed (values as float32, ne[0] the row length) to `w` as
// `type`: F32 as it is, or Q8_0 (ggml's reference quantizer, rows of whole 32-value blocks; a
// 1-D tensor or a row that is not stays F32). Throws UnsupportedError for another type.
void add_converted_tensor(gguf::GgufWriter& w, const std::string& name,
                          const std::vector<uint64_t>& ne, const std::vector<float>& values,
                          GgmlType type);

// A tensor's values as float32, rows of ne[0] (dequantized). Throws UnsupportedError naming the
// file and tensor when its type cannot be read back.
std::vector<float> tensor_values(const gguf::GgufFile& f, const gguf::TensorInfo& t);

// The eigenvalues and eigenvectors of the symmetric m x m matrix `a` (row-major), by cyclic
// Jacobi rotations to convergence: returns (eigenvalues descending, eigenvectors as the columns
// of an m x m row-major matrix in the same order).
std::pair<std::vector<double>, std::vector<double>> symmetric_eigen(std::vector<double> a,
                                                                    int64_t m);

// The orthogonal matrix nearest to the m x m matrix b (row-major): its polar factor
// b (bᵀb)^(-1/2), which maximizes trace(Rᵀ b) over orthogonal R (orthogonal Procrustes). Throws
// Error when b is singular to double precision (its polar factor is not unique).
std::vector<double> orthogonal_polar(const std::vector<double>& b, int64_t m);

// a · b and aᵀ for m x m row-major matrices.
std::vector<double> mat_mul(const std::vector<double>& a, const std::vector<double>& b, int64_t m);
std::vector<double> transposed(const std::vector<double>& a, int64_t m);

}  // namespace fluoro
