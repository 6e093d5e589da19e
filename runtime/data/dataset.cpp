// Opening a dataset: which files, where, and what makes them valid.
#include "data/dataset.h"

#include <sys/stat.h>

#include <cstdlib>
#include <cstring>
#include <memory>

#include "context/context.h"
#include "core/error.h"
#include "data/idx.h"

using namespace braid;

braid_dataset_t::~braid_dataset_t() {
  if (ctx) (void)release_context(ctx);  // a destructor cannot report a profile failure
}

namespace braid::data {
namespace {

struct Known {
  const char* name;
  const char* default_dir;
  const char* package;  // Debian package installing default_dir, or ""
};
// Both use the original file names (train-*, t10k-*) in their own directory.
constexpr Known kKnown[] = {
    {"fashion-mnist", "/usr/share/datasets/fashion-mnist", "dataset-fashion-mnist"},
    {"mnist", "/usr/share/datasets/mnist", ""},
};

const Known* find_known(const std::string& name) {
  for (const Known& k : kKnown)
    if (name == k.name) return &k;
  return nullptr;
}

// What to do about a missing or corrupt file, appended to every file error.
std::string hint_for(const Known& k, const std::string& dir) {
  if (*k.package)
    return cat("; the files come with the Debian package ", k.package, " (apt-get install ", k.package,
               "), which installs them in ", k.default_dir,
               "; a different directory is set with "
               "BRAID_DATA_DIR or braid_dataset_options.dir (now ",
               dir, ")");
  return cat("; put the ", k.name,
             " IDX files (train-images-idx3-ubyte[.gz], train-labels-idx1-ubyte[.gz], "
             "t10k-...) in ",
             k.default_dir, ", or point BRAID_DATA_DIR or braid_dataset_options.dir at them (now ", dir, ")");
}

// dir/base.gz if it exists, else dir/base if it exists, else dir/base.gz (reported as not found).
std::string locate(const std::string& dir, const std::string& base) {
  const std::string gz = dir + "/" + base + ".gz";
  const std::string plain = dir + "/" + base;
  struct stat st {};
  if (::stat(gz.c_str(), &st) == 0) return gz;
  if (::stat(plain.c_str(), &st) == 0) return plain;
  return gz;
}

}  // namespace

const char* debian_package(const std::string& name) {
  const Known* k = find_known(name);
  return k ? k->package : "";
}

DatasetPool::Owned open_dataset(Context& ctx, const braid_dataset_options& o) {
  if (!o.name) fail(BRAID_ERR_INVALID_ARGUMENT, "options->name is NULL");
  const Known* known = find_known(o.name);
  if (!known)
    fail(BRAID_ERR_INVALID_ARGUMENT, "options->name '", o.name, "' is not a known dataset (fashion-mnist, mnist)");
  // Read as the int the caller stored: a value outside the enum must be reported, not loaded as one.
  int32_t split = 0;
  static_assert(sizeof split == sizeof o.split);
  std::memcpy(&split, &o.split, sizeof split);
  if (split != BRAID_SPLIT_TRAIN && split != BRAID_SPLIT_TEST)
    fail(BRAID_ERR_INVALID_ARGUMENT, "options->split ", split, " is not BRAID_SPLIT_TRAIN or BRAID_SPLIT_TEST");
  std::string dir;
  if (o.dir)
    dir = o.dir;
  else if (const char* env = std::getenv("BRAID_DATA_DIR"); env && *env)
    dir = env;
  else
    dir = known->default_dir;
  if (dir.empty()) fail(BRAID_ERR_INVALID_ARGUMENT, "options->dir is empty");
  while (dir.size() > 1 && dir.back() == '/') dir.pop_back();

  const std::string hint = hint_for(*known, dir);
  const std::string prefix = split == BRAID_SPLIT_TRAIN ? "train" : "t10k";
  DatasetPool::Owned ds = DatasetPool::instance().make();
  ds->name = o.name;
  ds->image_path = locate(dir, prefix + "-images-idx3-ubyte");
  ds->label_path = locate(dir, prefix + "-labels-idx1-ubyte");

  // 28x28 is what both datasets are; another size means the wrong file. Both headers are read and
  // checked against each other (and each against its file's stated length) before any data is
  // decompressed, so a file that disagrees costs no more than its header.
  data::IdxReader image_file(ds->image_path, {3, {28, 28}}, hint);
  data::IdxReader label_file(ds->label_path, {1, {}}, hint);
  if (image_file.dims()[0] != label_file.dims()[0])
    fail(BRAID_ERR_IO, ds->image_path, " holds ", image_file.dims()[0], " images but ", ds->label_path, " holds ",
         label_file.dims()[0], " labels", hint);
  data::IdxFile labels{label_file.dims(), label_file.read_data()};
  data::IdxFile images{image_file.dims(), image_file.read_data()};
  for (size_t i = 0; i < labels.data.size(); ++i)
    if (labels.data[i] >= ds->classes)
      fail(BRAID_ERR_IO, ds->label_path, ": corrupt IDX file: label ", i, " is ", int{labels.data[i]}, ", outside [0, ",
           ds->classes, ")", hint);
  ds->count = images.dims[0];
  ds->rows = static_cast<int32_t>(images.dims[1]);
  ds->cols = static_cast<int32_t>(images.dims[2]);
  ds->pixels = std::move(images.data);
  ds->labels = std::move(labels.data);
  ctx.refs.fetch_add(1);
  ds->ctx = &ctx;
  return ds;
}

Dataset& checked_dataset(braid_dataset ds, const char* what) {
  return DatasetPool::instance().checked(ds, what, "dataset");
}

void release_dataset(Dataset* ds) noexcept {
  // The last reference takes the handle out of the live set and destroys the dataset.
  if (ds->refs.drop()) (void)DatasetPool::instance().retire(ds);
}

}  // namespace braid::data
