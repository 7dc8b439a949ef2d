// read_maybe_gzip_file (tokenizer.h): a file's bytes, gunzipped by zlib when it is gzip.
#include <zlib.h>

#include <string>

#include "core/check.h"
#include "tokenizer/tokenizer.h"

namespace slimkv {

std::string read_maybe_gzip_file(const std::string& path) {
  gzFile f = gzopen(path.c_str(), "rb");  // reads a plain file as it is
  SLIMKV_CHECK(f != nullptr, "{}: cannot open", path);
  std::string out;
  char buf[1 << 16];
  for (;;) {
    const int n = gzread(f, buf, sizeof(buf));
    if (n < 0) {
      int code = 0;
      std::string msg = gzerror(f, &code);
      gzclose(f);
      fail("{}: cannot read ({})", path, msg);
    }
    if (n == 0) break;
    out.append(buf, static_cast<size_t>(n));
    SLIMKV_CHECK(out.size() <= (size_t{1} << 31), "{}: over 2 GiB uncompressed", path);
  }
  gzclose(f);
  return out;
}

}  // namespace slimkv
