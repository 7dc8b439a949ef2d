#include "formats/gguf_file.h"

#include "core/byte_reader.h"
#include "core/checked_math.h"

namespace slimkv {
namespace {

constexpr uint32_t kGgufMagic = 0x46554747;  // "GGUF" little-endian
constexpr uint64_t kMaxStringBytes = 1u << 26;
constexpr uint32_t kMaxDims = 4;

const char* ggml_type_name(uint32_t t) {
  static const char* names[] = {"F32",  "F16",  "Q4_0", "Q4_1",   "Q4_2",   "Q4_3",   "Q5_0", "Q5_1",
                                "Q8_0", "Q8_1", "Q2_K", "Q3_K",   "Q4_K",   "Q5_K",   "Q6_K", "Q8_K",
                                "IQ2_XXS", "IQ2_XS", "IQ3_XXS", "IQ1_S", "IQ4_NL", "IQ3_S", "IQ2_S", "IQ4_XS",
                                "I8",   "I16",  "I32",  "I64",    "F64",    "IQ1_M",  "BF16", "Q4_0_4_4", "Q4_0_4_8",
                                "Q4_0_8_8", "TQ1_0", "TQ2_0", "IQ4_NL_4_4", "IQ4_NL_4_8", "IQ4_NL_8_8", "MXFP4"};
  return t < sizeof(names) / sizeof(names[0]) ? names[t] : "unknown";
}

std::optional<DType> dtype_from_ggml(uint32_t t) {  // the type traits table's GGML ids (core/dtype.h)
  for (const DTypeInfo& i : kDTypeInfo) {
    if (i.ggml_id == static_cast<int32_t>(t) && (i.weight || i.type == DType::BF16 || i.type == DType::I32)) {
      return i.type;
    }
  }
  return std::nullopt;
}

struct Parser {
  ByteReader& r;
  uint32_t version;

  uint64_t read_count(const char* field) {
    return version == 1 ? r.read<uint32_t>(field) : r.read<uint64_t>(field);
  }
  std::string read_string(const char* field) {
    uint64_t n = read_count(field);
    SLIMKV_CHECK(n <= kMaxStringBytes, "{}: string length {} in {} is absurd", r.what(), n, field);
    return std::string(r.read_bytes(n, field));
  }
  static uint64_t scalar_size(GgufType t) {
    switch (t) {
      case GgufType::U8: case GgufType::I8: case GgufType::BOOL: return 1;
      case GgufType::U16: case GgufType::I16: return 2;
      case GgufType::U32: case GgufType::I32: case GgufType::F32: return 4;
      case GgufType::U64: case GgufType::I64: case GgufType::F64: return 8;
      default: return 0;
    }
  }
  GgufType read_type(const char* field) {
    uint32_t t = r.read<uint32_t>(field);
    SLIMKV_CHECK(t <= 12, "{}: unknown metadata value type {} in {}", r.what(), t, field);
    return static_cast<GgufType>(t);
  }
  void read_scalar(GgufType t, int64_t* i, double* f) {
    switch (t) {
      case GgufType::U8: *i = r.read<uint8_t>("u8"); break;
      case GgufType::I8: *i = r.read<int8_t>("i8"); break;
      case GgufType::BOOL: *i = r.read<uint8_t>("bool") != 0; break;
      case GgufType::U16: *i = r.read<uint16_t>("u16"); break;
      case GgufType::I16: *i = r.read<int16_t>("i16"); break;
      case GgufType::U32: *i = r.read<uint32_t>("u32"); break;
      case GgufType::I32: *i = r.read<int32_t>("i32"); break;
      case GgufType::U64: *i = static_cast<int64_t>(r.read<uint64_t>("u64")); break;
      case GgufType::I64: *i = r.read<int64_t>("i64"); break;
      case GgufType::F32: *f = r.read<float>("f32"); break;
      case GgufType::F64: *f = r.read<double>("f64"); break;
      default: fail("{}: bad scalar type", r.what());
    }
  }
  GgufValue read_value(GgufType t, const std::string& key) {
    GgufValue v;
    v.type = t;
    if (t == GgufType::STRING) {
      v.s = read_string("string value");
    } else if (t == GgufType::ARRAY) {
      v.elem_type = read_type("array element type");
      SLIMKV_CHECK(v.elem_type != GgufType::ARRAY, "{}: nested arrays are not supported (key '{}')", r.what(), key);
      uint64_t n = read_count("array length");
      uint64_t min_elem = v.elem_type == GgufType::STRING ? (version == 1 ? 4 : 8) : scalar_size(v.elem_type);
      SLIMKV_CHECK(checked_mul(n, min_elem, "array size") <= r.remaining(),
                   "{}: array '{}' claims {} elements, more than the file holds", r.what(), key, n);
      if (v.elem_type == GgufType::STRING) {
        v.strings.reserve(n);
        for (uint64_t k = 0; k < n; ++k) v.strings.push_back(read_string("array string"));
      } else if (v.elem_type == GgufType::F32 || v.elem_type == GgufType::F64) {
        v.floats.resize(n);
        for (uint64_t k = 0; k < n; ++k) read_scalar(v.elem_type, nullptr, &v.floats[k]);
      } else {
        v.ints.resize(n);
        for (uint64_t k = 0; k < n; ++k) read_scalar(v.elem_type, &v.ints[k], nullptr);
      }
    } else {
      read_scalar(t, &v.i, &v.f);
    }
    return v;
  }
};

}  // namespace

bool GgufValue::is_int() const {
  switch (type) {
    case GgufType::U8: case GgufType::I8: case GgufType::U16: case GgufType::I16: case GgufType::U32:
    case GgufType::I32: case GgufType::U64: case GgufType::I64: case GgufType::BOOL: return true;
    default: return false;
  }
}

int64_t GgufTensorInfo::num_elements() const {
  int64_t n = 1;
  for (int64_t d : dims) n *= d;
  return n;
}

GgufFile::GgufFile(const std::string& path) : file_(std::make_unique<MappedFile>(path)), what_(path) {
  parse(file_->bytes());
}

std::unique_ptr<GgufFile> GgufFile::from_bytes(std::span<const uint8_t> bytes, const std::string& what) {
  std::unique_ptr<GgufFile> g(new GgufFile());
  g->what_ = what;
  g->parse(bytes);
  return g;
}

void GgufFile::parse(std::span<const uint8_t> bytes) {
  ByteReader r(bytes, what_);
  uint32_t magic = r.read<uint32_t>("magic");
  SLIMKV_CHECK(magic == kGgufMagic, "{}: not a GGUF file (bad magic)", what_);
  version_ = r.read<uint32_t>("version");
  SLIMKV_CHECK(version_ >= 1 && version_ <= 3, "{}: unsupported GGUF version {}", what_, version_);
  Parser p{r, version_};
  uint64_t num_tensors = p.read_count("tensor count");
  uint64_t num_kv = p.read_count("metadata count");
  SLIMKV_CHECK(num_tensors <= r.remaining() / 16 && num_kv <= r.remaining() / 8,
               "{}: absurd counts ({} tensors, {} metadata entries) for a {}-byte file", what_, num_tensors, num_kv,
               r.size());
  for (uint64_t k = 0; k < num_kv; ++k) {
    std::string key = p.read_string("metadata key");
    GgufType t = p.read_type("metadata value type");
    GgufValue v = p.read_value(t, key);
    SLIMKV_CHECK(kv_.emplace(key, std::move(v)).second, "{}: duplicate metadata key '{}'", what_, key);
  }
  uint64_t alignment = 32;
  if (auto a = get_int_opt("general.alignment")) {
    SLIMKV_CHECK(*a <= 65536 && is_power_of_two(*a), "{}: bad general.alignment {}", what_, *a);
    alignment = static_cast<uint64_t>(*a);
  }
  tensors_.reserve(num_tensors);
  for (uint64_t k = 0; k < num_tensors; ++k) {
    GgufTensorInfo ti;
    ti.name = p.read_string("tensor name");
    uint32_t n_dims = r.read<uint32_t>("tensor n_dims");
    SLIMKV_CHECK(n_dims >= 1 && n_dims <= kMaxDims, "{}: tensor '{}' has {} dims", what_, ti.name, n_dims);
    uint64_t num_elems = 1;
    for (uint32_t d = 0; d < n_dims; ++d) {
      uint64_t dim = p.read_count("tensor dim");
      SLIMKV_CHECK(dim >= 1 && dim <= (1ull << 40), "{}: tensor '{}' has bad dim {}", what_, ti.name, dim);
      ti.dims.push_back(static_cast<int64_t>(dim));
      num_elems = checked_mul(num_elems, dim, "tensor elements");
    }
    uint32_t type = r.read<uint32_t>("tensor type");
    auto dt = dtype_from_ggml(type);
    SLIMKV_CHECK(dt.has_value(), "{}: unsupported tensor type {} ({}) for tensor '{}'", what_, ggml_type_name(type),
                 type, ti.name);
    ti.dtype = *dt;
    ti.offset_bytes = r.read<uint64_t>("tensor offset");
    SLIMKV_CHECK(ti.offset_bytes % alignment == 0, "{}: tensor '{}' offset {} is not aligned to {}", what_, ti.name,
                 ti.offset_bytes, alignment);
    int64_t be = dtype_block_elems(ti.dtype);
    SLIMKV_CHECK(ti.dims[0] % be == 0, "{}: tensor '{}' row length {} is not a multiple of the {} block size {}",
                 what_, ti.name, ti.dims[0], dtype_name(ti.dtype), be);
    ti.size_bytes = checked_mul(num_elems / be, dtype_block_bytes(ti.dtype), "tensor bytes");
    SLIMKV_CHECK(tensor_index_.emplace(ti.name, tensors_.size()).second, "{}: duplicate tensor '{}'", what_, ti.name);
    tensors_.push_back(std::move(ti));
  }
  uint64_t data_start = checked_add(r.offset(), alignment - 1, "data offset") / alignment * alignment;
  for (auto& ti : tensors_) {
    uint64_t begin = checked_add(data_start, ti.offset_bytes, "tensor offset");
    uint64_t end = checked_add(begin, ti.size_bytes, "tensor end");
    SLIMKV_CHECK(end <= r.size(), "{}: tensor '{}' data [{}, {}) lies beyond the end of the file ({} bytes)", what_,
                 ti.name, begin, end, r.size());
    ti.data = r.at(begin);
  }
}

const GgufValue* GgufFile::find(const std::string& key) const {
  auto it = kv_.find(key);
  return it == kv_.end() ? nullptr : &it->second;
}

const GgufTensorInfo* GgufFile::find_tensor(const std::string& name) const {
  auto it = tensor_index_.find(name);
  return it == tensor_index_.end() ? nullptr : &tensors_[it->second];
}

std::optional<int64_t> GgufFile::get_int_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  SLIMKV_CHECK(v->is_int(), "{}: metadata '{}' is not an integer", what_, key);
  return v->i;
}
int64_t GgufFile::get_int(const std::string& key) const {
  auto v = get_int_opt(key);
  SLIMKV_CHECK(v.has_value(), "{}: missing metadata '{}'", what_, key);
  return *v;
}
std::optional<double> GgufFile::get_float_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  if (v->is_int()) return static_cast<double>(v->i);
  SLIMKV_CHECK(v->is_float(), "{}: metadata '{}' is not a number", what_, key);
  return v->f;
}
double GgufFile::get_float(const std::string& key) const {
  auto v = get_float_opt(key);
  SLIMKV_CHECK(v.has_value(), "{}: missing metadata '{}'", what_, key);
  return *v;
}
std::optional<std::string> GgufFile::get_string_opt(const std::string& key) const {
  const GgufValue* v = find(key);
  if (!v) return std::nullopt;
  SLIMKV_CHECK(v->type == GgufType::STRING, "{}: metadata '{}' is not a string", what_, key);
  return v->s;
}
std::string GgufFile::get_string(const std::string& key) const {
  auto v = get_string_opt(key);
  SLIMKV_CHECK(v.has_value(), "{}: missing metadata '{}'", what_, key);
  return *v;
}

}  // namespace slimkv
