#include "model/convert_math.h"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <optional>
#include <string>

#include "core/error.h"
#include "tensor/dequantize.h"
#include "tensor/ggml_type.h"
#include "tensor/quantize.h"

namespace fluoro {

void check_calibration(const AttnInputGram* cal, int64_t n_embd, int64_t n_layer,
                       const std::string& where) {
    if (!cal) return;
    bool ok = cal->n_embd == n_embd && int64_t(cal->layers.size()) == n_layer;
    for (const std::vector<double>& g : cal->layers)
        ok = ok && g.size() == size_t((n_embd + 1) * (n_embd + 1));
    if (!ok)
        throw Error(where + "the calibration is of " + std::to_string(cal->n_embd) + " inputs x " +
                    std::to_string(cal->layers.size()) + " layers, the model has " +
                    std::to_string(n_embd) + " x " + std::to_string(n_layer) +
                    " (each layer's Gram (inputs + 1)² values)");
}

void add_converted_tensor(gguf::GgufWriter& w, const std::string& name,
                          const std::vector<uint64_t>& ne, const std::vector<float>& values,
                          GgmlType type) {
    if (type != GgmlType::F32 && type != GgmlType::Q8_0)
        throw UnsupportedError("converted tensor '" + name + "': type " +
                               std::string(type_name(type)) + " (F32 or Q8_0)");
    const int64_t row = ne.empty() ? 0 : int64_t(ne[0]);
    const std::optional<uint64_t> bytes = row_bytes(GgmlType::Q8_0, uint64_t(row));
    if (type == GgmlType::F32 || ne.size() < 2 || !bytes) {
        w.add_tensor_f32(name, ne, values);
        return;
    }
    const int64_t rows = int64_t(values.size()) / row;
    std::vector<std::byte> q(static_cast<size_t>(*bytes) * size_t(rows));
    for (int64_t r = 0; r < rows; ++r)
        quantize_row(GgmlType::Q8_0, values.data() + r * row, q.data() + size_t(r) * *bytes, row);
    w.add_tensor(name, GgmlType::Q8_0, ne, q);
}

std::vector<float> tensor_values(const gguf::GgufFile& f, const gguf::TensorInfo& t) {
    if (!type_traits(t.type).dequantize)
        throw UnsupportedError(f.name() + ": tensor '" + t.name + "' is " +
                               std::string(type_name(t.type)) + ", which cannot be read back");
    int64_t n = 1;
    for (uint32_t i = 0; i < t.n_dims; ++i) n *= int64_t(t.ne[i]);
    std::vector<float> v(static_cast<size_t>(n));
    dequantize_row(t.type, f.tensor_data(t).data(), v.data(), n);
    return v;
}

std::pair<std::vector<double>, std::vector<double>> symmetric_eigen(std::vector<double> a,
                                                                    int64_t m) {
    std::vector<double> v(size_t(m * m), 0.0);
    for (int64_t i = 0; i < m; ++i) v[size_t(i * m + i)] = 1.0;
    auto at = [&](int64_t i, int64_t j) -> double& { return a[size_t(i * m + j)]; };
    double total = 0;
    for (double x : a) total += x * x;
    for (int sweep = 0; sweep < 60; ++sweep) {
        double off = 0;
        for (int64_t i = 0; i < m; ++i)
            for (int64_t j = i + 1; j < m; ++j) off += at(i, j) * at(i, j);
        if (off <= 1e-30 * total) break;
        for (int64_t p = 0; p < m; ++p)
            for (int64_t q = p + 1; q < m; ++q) {
                const double apq = at(p, q);
                if (std::abs(apq) <= 1e-300) continue;
                // The rotation that zeroes a[p][q] (Golub & Van Loan, symmetric Schur).
                const double tau = (at(q, q) - at(p, p)) / (2.0 * apq);
                const double t =
                    (tau >= 0 ? 1.0 : -1.0) / (std::abs(tau) + std::sqrt(1 + tau * tau));
                const double c = 1.0 / std::sqrt(1 + t * t), s = t * c;
                for (int64_t k = 0; k < m; ++k) {  // columns p and q
                    const double akp = at(k, p), akq = at(k, q);
                    at(k, p) = c * akp - s * akq;
                    at(k, q) = s * akp + c * akq;
                }
                for (int64_t k = 0; k < m; ++k) {  // rows p and q
                    const double apk = at(p, k), aqk = at(q, k);
                    at(p, k) = c * apk - s * aqk;
                    at(q, k) = s * apk + c * aqk;
                }
                for (int64_t k = 0; k < m; ++k) {
                    const double vkp = v[size_t(k * m + p)], vkq = v[size_t(k * m + q)];
                    v[size_t(k * m + p)] = c * vkp - s * vkq;
                    v[size_t(k * m + q)] = s * vkp + c * vkq;
                }
            }
    }
    std::vector<int64_t> order(static_cast<size_t>(m));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(),
                     [&](int64_t x, int64_t y) { return at(x, x) > at(y, y); });
    std::vector<double> values(static_cast<size_t>(m)), vectors(size_t(m * m));
    for (int64_t c = 0; c < m; ++c) {
        values[size_t(c)] = at(order[size_t(c)], order[size_t(c)]);
        for (int64_t k = 0; k < m; ++k)
            vectors[size_t(k * m + c)] = v[size_t(k * m + order[size_t(c)])];
    }
    return {values, vectors};
}

std::vector<double> mat_mul(const std::vector<double>& a, const std::vector<double>& b, int64_t m) {
    std::vector<double> c(static_cast<size_t>(m * m), 0.0);
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < m; ++k) {
            const double aik = a[size_t(i * m + k)];
            if (aik == 0) continue;
            for (int64_t j = 0; j < m; ++j) c[size_t(i * m + j)] += aik * b[size_t(k * m + j)];
        }
    return c;
}

std::vector<double> transposed(const std::vector<double>& a, int64_t m) {
    std::vector<double> t(static_cast<size_t>(m * m));
    for (int64_t i = 0; i < m; ++i)
        for (int64_t j = 0; j < m; ++j) t[size_t(j * m + i)] = a[size_t(i * m + j)];
    return t;
}

std::vector<double> orthogonal_polar(const std::vector<double>& b, int64_t m) {
    // bᵀb = U S² Uᵀ, so (bᵀb)^(-1/2) = U S⁻¹ Uᵀ and the polar factor is b U S⁻¹ Uᵀ.
    if (m == 0) return {};
    const auto [s2, u] = symmetric_eigen(mat_mul(transposed(b, m), b, m), m);
    if (!(s2[size_t(m - 1)] > 1e-24 * s2[0]))
        throw Error("orthogonal alignment: the matrix is singular (squared singular values " +
                    std::to_string(s2[0]) + " .. " + std::to_string(s2[size_t(m - 1)]) + ")");
    std::vector<double> us = u;  // U S⁻¹: column k scaled by 1 / s_k
    for (int64_t i = 0; i < m; ++i)
        for (int64_t k = 0; k < m; ++k) us[size_t(i * m + k)] /= std::sqrt(s2[size_t(k)]);
    return mat_mul(b, mat_mul(us, transposed(u, m), m), m);
}

}  // namespace fluoro
