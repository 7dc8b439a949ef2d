#include "compress/calibration.h"

#include <Eigen/Dense>
#include <cstring>
#include <fstream>
#include <nlohmann/json.hpp>

#include "core/byte_reader.h"
#include "core/check.h"
#include "core/mapped_file.h"

namespace slimkv {
namespace {
constexpr char kMagic[8] = {'S', 'K', 'V', 'C', 'A', 'L', '0', '1'};
}

KvCovariance::KvCovariance(int32_t L, int32_t H, int32_t D)
    : L_(L), H_(H), D_(D), k_(static_cast<size_t>(L) * H * D * D, 0.0), v_(k_.size(), 0.0), q_(k_.size(), 0.0) {}

void KvCovariance::add_queries(int32_t layer, const float* q, int32_t T, int32_t num_heads) {
  have_q_ = true;
  const int32_t group = std::max(1, num_heads / H_);
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t qh = 0; qh < num_heads; ++qh) {
      const float* r = q + (static_cast<size_t>(t) * num_heads + qh) * D_;
      double* c = q_.data() + (static_cast<size_t>(layer) * H_ + qh / group) * D_ * D_;
      for (int32_t i = 0; i < D_; ++i) {
        for (int32_t j = 0; j < D_; ++j) c[i * D_ + j] += double(r[i]) * r[j];
      }
    }
  }
}

void KvCovariance::add(int32_t layer, const float* k, const float* v, int32_t T) {
  if (layer == 0) tokens_ += T;
  for (int32_t t = 0; t < T; ++t) {
    for (int32_t h = 0; h < H_; ++h) {
      const float* kr = k + (static_cast<size_t>(t) * H_ + h) * D_;
      const float* vr = v + (static_cast<size_t>(t) * H_ + h) * D_;
      double* ck = k_.data() + (static_cast<size_t>(layer) * H_ + h) * D_ * D_;
      double* cv = v_.data() + (static_cast<size_t>(layer) * H_ + h) * D_ * D_;
      for (int32_t i = 0; i < D_; ++i) {
        for (int32_t j = 0; j < D_; ++j) {
          ck[i * D_ + j] += double(kr[i]) * kr[j];
          cv[i * D_ + j] += double(vr[i]) * vr[j];
        }
      }
    }
  }
}

Calibration Calibration::from_covariance(const KvCovariance& cov, const std::string& fingerprint) {
  Calibration c;
  c.model_fingerprint = fingerprint;
  c.num_layers = cov.L_;
  c.num_kv_heads = cov.H_;
  c.head_dim = cov.D_;
  c.num_tokens = cov.tokens_;
  const int32_t D = cov.D_;
  const size_t n = static_cast<size_t>(cov.L_) * cov.H_;
  c.k_eig.resize(n * D);
  c.v_eig.resize(n * D);
  c.k_basis.resize(n * D * D);
  c.v_basis.resize(n * D * D);
  for (size_t i = 0; i < n; ++i) {
    for (int which = 0; which < 2; ++which) {
      const double* src = (which == 0 ? cov.k_ : cov.v_).data() + i * D * D;
      Eigen::Map<const Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>> m(src, D, D);
      Eigen::SelfAdjointEigenSolver<Eigen::MatrixXd> es(m);
      SLIMKV_CHECK(es.info() == Eigen::Success, "calibration: eigendecomposition failed");
      float* eig = (which == 0 ? c.k_eig : c.v_eig).data() + i * D;
      float* basis = (which == 0 ? c.k_basis : c.v_basis).data() + i * D * D;
      for (int32_t r = 0; r < D; ++r) {  // Eigen sorts ascending: take them largest first
        const int32_t col = D - 1 - r;
        eig[r] = static_cast<float>(std::max(0.0, es.eigenvalues()(col)));
        for (int32_t j = 0; j < D; ++j) basis[r * D + j] = static_cast<float>(es.eigenvectors()(j, col));
      }
    }
  }
  if (cov.have_q_) c.q_moment.assign(cov.q_.begin(), cov.q_.end());
  return c;
}

void Calibration::save(const std::string& path) const {
  nlohmann::json h = {{"version", kVersion}, {"model_fingerprint", model_fingerprint}, {"num_layers", num_layers},
                      {"num_kv_heads", num_kv_heads}, {"head_dim", head_dim}, {"num_tokens", num_tokens}};
  nlohmann::json ev_k = nlohmann::json::array(), ev_v = nlohmann::json::array();
  for (int32_t l = 0; l < num_layers; ++l) {
    std::vector<double> ck, cv;
    for (int32_t r = 1; r <= head_dim; ++r) {
      ck.push_back(explained(l, r, true));
      cv.push_back(explained(l, r, false));
    }
    ev_k.push_back(ck);
    ev_v.push_back(cv);
  }
  h["explained_variance_k"] = ev_k;
  h["explained_variance_v"] = ev_v;
  if (!layer_sensitivity.empty()) {
    h["layer_sensitivity"] = layer_sensitivity;
    h["sensitivity_tokens"] = sensitivity_tokens;
  }
  if (!attention.empty()) {
    h["attention_profile"] = {{"block_tokens", attention.block_tokens}, {"num_queries", attention.num_queries},
                              {"mass", attention.mass}};
    if (attention.read_steps > 0) {
      h["attention_profile"]["read_steps"] = attention.read_steps;
      h["attention_profile"]["head_read_mass"] = attention.head_read_mass;
    }
  }
  const std::string header = h.dump();
  std::ofstream out(path, std::ios::binary);
  SLIMKV_CHECK(out.good(), "cannot write '{}'", path);
  out.write(kMagic, 8);
  const uint32_t len = static_cast<uint32_t>(header.size());
  out.write(reinterpret_cast<const char*>(&len), 4);
  out.write(header.data(), len);
  for (const auto* v : {&k_eig, &k_basis, &v_eig, &v_basis, &q_moment}) {  // q_moment: empty unless measured
    out.write(reinterpret_cast<const char*>(v->data()), static_cast<std::streamsize>(v->size() * sizeof(float)));
  }
  SLIMKV_CHECK(out.good(), "error writing '{}'", path);
}

Calibration Calibration::load(const std::string& path) {
  MappedFile f(path);
  ByteReader r(f.bytes(), path);
  std::string_view magic = r.read_bytes(8, "magic");
  SLIMKV_CHECK(magic == std::string_view(kMagic, 8), "{}: not a slimkv calibration file", path);
  const uint32_t len = r.read<uint32_t>("header length");
  auto h = nlohmann::json::parse(r.read_bytes(len, "header"), nullptr, false);
  SLIMKV_CHECK(h.is_object(), "{}: bad calibration header", path);
  auto geti = [&](const char* k) {
    SLIMKV_CHECK(h.contains(k) && h[k].is_number_integer(), "{}: calibration header lacks '{}'", path, k);
    return h[k].get<int64_t>();
  };
  SLIMKV_CHECK(geti("version") >= 1 && geti("version") <= kVersion, "{}: calibration version {} (this build reads 1 "
               "to {})", path, geti("version"), kVersion);
  Calibration c;
  c.num_layers = static_cast<int32_t>(geti("num_layers"));
  c.num_kv_heads = static_cast<int32_t>(geti("num_kv_heads"));
  c.head_dim = static_cast<int32_t>(geti("head_dim"));
  c.num_tokens = geti("num_tokens");
  SLIMKV_CHECK(c.num_layers > 0 && c.num_layers <= 1024 && c.num_kv_heads > 0 && c.num_kv_heads <= 1024 &&
                   c.head_dim > 0 && c.head_dim <= 1024,
               "{}: absurd calibration dimensions", path);
  SLIMKV_CHECK(h.contains("model_fingerprint") && h["model_fingerprint"].is_string(), "{}: no model fingerprint", path);
  c.model_fingerprint = h["model_fingerprint"].get<std::string>();
  const size_t n = static_cast<size_t>(c.num_layers) * c.num_kv_heads, D = c.head_dim;
  auto take = [&](std::vector<float>& v, size_t count) {
    std::string_view b = r.read_bytes(count * sizeof(float), "calibration data");
    v.resize(count);
    std::memcpy(v.data(), b.data(), b.size());
  };
  take(c.k_eig, n * D);
  take(c.k_basis, n * D * D);
  take(c.v_eig, n * D);
  take(c.v_basis, n * D * D);
  if (r.remaining() == n * D * D * sizeof(float)) take(c.q_moment, n * D * D);  // version 3 with the queries
  SLIMKV_CHECK(r.remaining() == 0, "{}: {} trailing bytes", path, r.remaining());
  if (h.contains("layer_sensitivity")) {
    const auto& a = h["layer_sensitivity"];
    SLIMKV_CHECK(a.is_array() && static_cast<int32_t>(a.size()) == c.num_layers && h.contains("sensitivity_tokens") &&
                     h["sensitivity_tokens"].is_number_integer(),
                 "{}: malformed layer_sensitivity", path);
    for (const auto& x : a) {
      SLIMKV_CHECK(x.is_number() && x.get<double>() >= 0 && x.get<double>() < 1e6, "{}: malformed layer_sensitivity",
                   path);
      c.layer_sensitivity.push_back(x.get<float>());
    }
    c.sensitivity_tokens = h["sensitivity_tokens"].get<int32_t>();
  }
  if (h.contains("attention_profile")) {
    const auto& a = h["attention_profile"];
    auto bad = [&] { fail("{}: malformed attention_profile", path); };
    if (!a.is_object() || !a.contains("block_tokens") || !a["block_tokens"].is_number_integer() ||
        !a.contains("mass") || !a["mass"].is_array() || static_cast<int32_t>(a["mass"].size()) != c.num_layers) {
      bad();
    }
    c.attention.block_tokens = a["block_tokens"].get<int32_t>();
    if (c.attention.block_tokens < 1 || c.attention.block_tokens > 4096) bad();
    c.attention.num_queries = a.contains("num_queries") && a["num_queries"].is_number_integer() ? a["num_queries"].get<int64_t>() : 0;
    for (const auto& row : a["mass"]) {
      if (!row.is_array() || row.size() < 2 || row.size() > (1u << 20)) bad();
      std::vector<float> m;
      for (const auto& x : row) {
        if (!x.is_number() || !(x.get<double>() >= 0 && x.get<double>() <= 1.0001)) bad();
        m.push_back(x.get<float>());
        if (m.size() > 1 && m.back() < m[m.size() - 2]) bad();
      }
      c.attention.mass.push_back(std::move(m));
    }
    if (a.contains("head_read_mass")) {  // [layers][kv_heads * read_steps], non-decreasing per head
      if (!a.contains("read_steps") || !a["read_steps"].is_number_integer() || !a["head_read_mass"].is_array() ||
          static_cast<int32_t>(a["head_read_mass"].size()) != c.num_layers) {
        bad();
      }
      const int64_t S = a["read_steps"].get<int64_t>();
      if (S < 1 || S > 4096) bad();
      c.attention.read_steps = static_cast<int32_t>(S);
      for (const auto& row : a["head_read_mass"]) {
        if (!row.is_array() || static_cast<int64_t>(row.size()) != S * c.num_kv_heads) bad();
        std::vector<float> m;
        for (const auto& x : row) {
          if (!x.is_number() || !(x.get<double>() >= 0 && x.get<double>() <= 1.0001)) bad();
          m.push_back(x.get<float>());
          if (static_cast<int64_t>(m.size() - 1) % S != 0 && m.back() < m[m.size() - 2]) bad();
        }
        c.attention.head_read_mass.push_back(std::move(m));
      }
    }
  }
  return c;
}

double Calibration::explained(int32_t layer, int32_t rank, bool keys) const {
  const auto& e = keys ? k_eig : v_eig;
  double kept = 0, total = 0;
  for (int32_t h = 0; h < num_kv_heads; ++h) {
    const float* eig = e.data() + (static_cast<size_t>(layer) * num_kv_heads + h) * head_dim;
    for (int32_t r = 0; r < head_dim; ++r) {
      total += eig[r];
      if (r < rank) kept += eig[r];
    }
  }
  return total > 0 ? kept / total : 1.0;
}

namespace {

using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic>;

// S^p for a symmetric positive semi-definite S (eigenvalues floored at 1e-6 of the largest).
MatD sym_power(const MatD& s, double p) {
  Eigen::SelfAdjointEigenSolver<MatD> es(s);
  SLIMKV_CHECK(es.info() == Eigen::Success, "calibration: eigendecomposition failed");
  const double floor = std::max(1e-30, 1e-6 * es.eigenvalues().maxCoeff());
  Eigen::VectorXd d = es.eigenvalues().cwiseMax(floor).array().pow(p);
  return es.eigenvectors() * d.asDiagonal() * es.eigenvectors().transpose();
}

}  // namespace

void Calibration::query_aware_sketch(int32_t layer, int32_t rank, std::vector<float>& a, std::vector<float>& b) const {
  SLIMKV_CHECK(!q_moment.empty(), "calibration: no query moments (made by an older `slimkv calibrate`)");
  SLIMKV_CHECK(layer >= 0 && layer < num_layers && rank >= 1 && rank <= head_dim, "calibration: no rank-{} sketch "
               "for layer {}", rank, layer);
  const int32_t D = head_dim;
  a.clear();
  b.clear();
  for (int32_t h = 0; h < num_kv_heads; ++h) {
    const size_t at = (static_cast<size_t>(layer) * num_kv_heads + h) * D * D;
    MatD sk = MatD::Zero(D, D), sq(D, D);
    for (int32_t i = 0; i < D; ++i) {
      for (int32_t j = 0; j < D; ++j) sq(i, j) = q_moment[at + static_cast<size_t>(i) * D + j];
    }
    // Σk from its eigenpairs (the file keeps those, not the matrix): Σ_r eig_r u_r u_rᵀ.
    const float* eig = k_eig.data() + (static_cast<size_t>(layer) * num_kv_heads + h) * D;
    const float* basis = k_basis.data() + at;
    for (int32_t r = 0; r < D; ++r) {
      Eigen::Map<const Eigen::VectorXf> u(basis + static_cast<size_t>(r) * D, D);
      const Eigen::VectorXd ud = u.cast<double>();
      sk += static_cast<double>(eig[r]) * ud * ud.transpose();
    }
    const MatD qh = sym_power(sq, 0.5), qih = sym_power(sq, -0.5), kh = sym_power(sk, 0.5), kih = sym_power(sk, -0.5);
    Eigen::JacobiSVD<MatD> svd(qh * kh, Eigen::ComputeFullU | Eigen::ComputeFullV);
    const Eigen::VectorXd s = svd.singularValues().head(rank).cwiseSqrt();
    const MatD am = s.asDiagonal() * svd.matrixU().leftCols(rank).transpose() * qih;  // [rank, D]
    const MatD bm = s.asDiagonal() * svd.matrixV().leftCols(rank).transpose() * kih;  // [rank, D]
    for (int32_t r = 0; r < rank; ++r) {
      for (int32_t j = 0; j < D; ++j) {
        a.push_back(static_cast<float>(am(r, j)));
        b.push_back(static_cast<float>(bm(r, j)));
      }
    }
  }
}

std::vector<float> Calibration::key_basis(int32_t layer, int32_t rank) const {
  SLIMKV_CHECK(layer >= 0 && layer < num_layers && rank >= 1 && rank <= head_dim, "calibration: no rank-{} key basis "
               "for layer {} ({} layers of head dim {})", rank, layer, num_layers, head_dim);
  std::vector<float> out;
  const size_t D = head_dim;
  for (int32_t h = 0; h < num_kv_heads; ++h) {
    const float* b = k_basis.data() + (static_cast<size_t>(layer) * num_kv_heads + h) * D * D;
    out.insert(out.end(), b, b + static_cast<size_t>(rank) * D);
  }
  return out;
}

std::vector<LayerProjection> Calibration::projections(const KvLayout& layout) const {
  SLIMKV_CHECK(layout.num_model_streams() == num_layers, "calibration has {} layers, the model {}", num_layers,
               layout.num_model_streams());
  std::vector<LayerProjection> out(layout.num_layers());
  const size_t D = head_dim;
  for (int32_t l = 0; l < num_layers; ++l) {
    const KvLayerGeometry& g = layout.layers[l];
    SLIMKV_CHECK(g.num_kv_heads == num_kv_heads && g.head_dim_k == head_dim && g.head_dim_v == head_dim,
                 "calibration is for {} KV heads of dim {}, the model's layer {} has {} of {}/{}", num_kv_heads,
                 head_dim, l, g.num_kv_heads, g.head_dim_k, g.head_dim_v);
    for (int which = 0; which < 2; ++which) {
      const int32_t rank = which == 0 ? g.k_dim : g.v_dim;
      if (rank == head_dim) continue;  // full rank: no projection
      auto& dst = which == 0 ? out[l].k : out[l].v;
      const auto& src = which == 0 ? k_basis : v_basis;
      for (int32_t h = 0; h < num_kv_heads; ++h) {
        const float* b = src.data() + (static_cast<size_t>(l) * num_kv_heads + h) * D * D;
        dst.insert(dst.end(), b, b + static_cast<size_t>(rank) * D);
      }
    }
  }
  return out;
}

}  // namespace slimkv
