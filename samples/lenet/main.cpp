// braid-lenet: trains the chapter's LeNet from scratch on Fashion-MNIST on one device and reports, per
// epoch, the training time, the mean training loss and the test accuracy.
//
//   braid-lenet [--device NAME] [--devices LIST] [--weights LIST|auto] [--epochs N] [--batches N]
//               [--test-batches N] [--batch-size N] [--lr X] [--init-std X] [--seed N] [--data-dir DIR]
//               [--json] [--save-init FILE] [--step-losses N] [--hybridize] [--export PREFIX] [--dist]
//               [--amp bf16|off] [--list-devices]
//
// An option's value may follow it (`--epochs 2`) or be joined to it (`--epochs=2`); tools/common/cli.h
// reads the command line.
//
//   --device NAME   a device id ("cpu:0", "vulkan:0"); default: the best device (best_device below)
//   --devices LIST  data parallelism over several devices ("cpu:0,cpu:1", "cpu:0,vulkan:0"): each batch
//                   is split over them (split_and_load), each replica back-propagates its shard, and a
//                   braid Trainer all-reduces the gradients and updates every replica (docs/PARALLEL.md)
//   --weights LIST  the split's weights, one per device ("3,1"), or "auto": each device's samples/s on
//                   LeNet, measured alone first (samples/common/calibrate.h); default: even
//   --epochs N      default 4
//   --batch-size N  default 256; --lr X: SGD's learning rate (default 0.2); --seed N: default 0
//   --data-dir DIR  the dataset's folder (default: Debian's dataset-fashion-mnist)
//   --batches N     at most N training batches per epoch (0 = all; CI uses a short run)
//   --test-batches N  evaluate at most N test batches of 1000 images (0 = all 10 000, the default;
//                   short CI runs on slow devices use a subset)
//   --init-std X    standard deviation of the initial weights (default 0.01, the chapter's)
//   --json          one JSON object on stdout at the end (progress and the table go to stderr); each
//                   epoch also reports loss_first / loss_last, the mean loss of its first / last 5 batches
//   --save-init FILE  write the initial parameters to FILE as raw little-endian float32, in the order
//                   w1 b1 w2 b2 w3 b3 w4 b4 with braid's shapes (lenet.h), for lenet_torch.py --init-from
//   --step-losses N  with --json, also report the loss of each of the run's first N steps
//   --hybridize     trace the whole training step (forward, backward, SGD update) once per batch shape
//                   and run it as one graph per batch (docs/GRAPH.md); evaluation is hybridized too
//   --export PREFIX  after training, save the forward pass as a graph: PREFIX.json, PREFIX.safetensors
//                   (samples/hybrid/run_exported.c loads and evaluates it)
//   --dist          data parallelism across processes too: join the job's process group (rank, size and
//                   rendezvous from the launcher: `braid-run -n 2 braid-lenet --dist`, mpirun, srun;
//                   docs/DISTRIBUTED.md). --batch-size is then the global batch, a multiple of the
//                   ranks; each rank reads its part of every epoch (braid_batch_iterator_options
//                   num_parts / part_index), the Trainer sums the gradients over its devices and then
//                   across the ranks, and the losses reported are the means over every rank's rows.
//                   Every rank evaluates the whole test set with the same parameters and prints its
//                   JSON (braid-run prefixes each line with the rank)
//   --amp bf16      automatic mixed precision (docs/AMP.md): the convolutions and matrix products round
//                   their float32 operands to bfloat16 and accumulate in float32; weights stay float32
//   --list-devices  print the devices (id and name) and exit
//
// A progress bar runs on stderr during each epoch (plain lines at each quarter when stderr is not a
// terminal).
//
// Exit status: 0 on success, 1 on an error, 2 for a bad command line, 77 when the dataset is not
// installed (ctest: skipped).
#include <cerrno>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <memory>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "../common/amp.h"
#include "../common/calibrate.h"
#include "../common/progress.h"
#include "../common/ranks.h"
#include "../common/replicas.h"
#include "cli.h"
#include "lenet.h"

namespace {

struct Options {
  std::string device;
  std::vector<std::string> devices;  // --devices
  std::vector<double> weights;       // --weights
  bool auto_weights = false;         // --weights auto
  int epochs = 4;
  int64_t batches = 0;
  int64_t test_batches = 0;
  int64_t batch_size = 256;
  double lr = 0.2;
  double init_std = 0.01;
  uint64_t seed = 0;
  std::string data_dir;
  bool json = false;
  bool list = false;
  std::string save_init;
  int64_t step_losses = 0;
  bool hybridize = false;
  std::string export_prefix;
  bool dist = false;
  braid_dtype amp = BRAID_FLOAT32;  // --amp
};

constexpr const char* kUsage =
    "usage: braid-lenet [--device NAME] [--devices LIST] [--weights LIST|auto] [--epochs N] [--batches N]\n"
    "                   [--test-batches N] [--batch-size N] [--lr X] [--init-std X] [--seed N] [--data-dir DIR]\n"
    "                   [--json] [--save-init FILE] [--step-losses N] [--hybridize] [--export PREFIX]\n"
    "                   [--dist] [--amp bf16|off] [--list-devices] [--help] [--version]\n";

Options parse(int argc, char** argv) {
  enum {
    kDevice = CLI_FIRST,
    kDevices,
    kWeights,
    kEpochs,
    kBatches,
    kTestBatches,
    kBatchSize,
    kLr,
    kInitStd,
    kSeed,
    kDataDir,
    kJson,
    kSaveInit,
    kStepLosses,
    kHybridize,
    kExport,
    kDist,
    kAmp,
    kListDevices,
  };
  static const option options[] = {
      {"device", required_argument, nullptr, kDevice},
      {"devices", required_argument, nullptr, kDevices},
      {"weights", required_argument, nullptr, kWeights},
      {"epochs", required_argument, nullptr, kEpochs},
      {"batches", required_argument, nullptr, kBatches},
      {"test-batches", required_argument, nullptr, kTestBatches},
      {"batch-size", required_argument, nullptr, kBatchSize},
      {"lr", required_argument, nullptr, kLr},
      {"init-std", required_argument, nullptr, kInitStd},
      {"seed", required_argument, nullptr, kSeed},
      {"data-dir", required_argument, nullptr, kDataDir},
      {"json", no_argument, nullptr, kJson},
      {"save-init", required_argument, nullptr, kSaveInit},
      {"step-losses", required_argument, nullptr, kStepLosses},
      {"hybridize", no_argument, nullptr, kHybridize},
      {"export", required_argument, nullptr, kExport},
      {"dist", no_argument, nullptr, kDist},
      {"amp", required_argument, nullptr, kAmp},
      {"list-devices", no_argument, nullptr, kListDevices},
      CLI_STANDARD_OPTIONS,
      {},
  };
  cli_parser cli = cli_parser_init(
      "braid-lenet", kUsage,
      "Trains LeNet on Fashion-MNIST (samples/lenet/README.md; the options: samples/lenet/main.cpp).\n", options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kDevice: o.device = cli.value; break;
      case kDevices: o.devices = cli_list(cli, cli.value); break;
      case kWeights: cli_weights(cli, o.weights, o.auto_weights); break;
      case kEpochs: o.epochs = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kBatches: o.batches = cli_int(&cli, 0, INT64_MAX); break;
      case kTestBatches: o.test_batches = cli_int(&cli, 0, INT64_MAX); break;
      case kBatchSize: o.batch_size = cli_int(&cli, 1, INT64_MAX); break;
      case kLr: o.lr = cli_real(&cli, 0); break;
      case kInitStd: o.init_std = cli_real(&cli, 0); break;
      case kSeed: o.seed = static_cast<uint64_t>(cli_int(&cli, 0, INT64_MAX)); break;
      case kDataDir: o.data_dir = cli.value; break;
      case kJson: o.json = true; break;
      case kSaveInit: o.save_init = cli.value; break;
      case kStepLosses: o.step_losses = cli_int(&cli, 0, INT64_MAX); break;
      case kHybridize: o.hybridize = true; break;
      case kExport: o.export_prefix = cli.value; break;
      case kDist: o.dist = true; break;
      case kAmp: o.amp = samples::parse_amp(cli, cli.value); break;
      case kListDevices: o.list = true; break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  return o;
}

// The best device: a discrete GPU, else an integrated one, else a virtual one, else the CPU; the first
// of its kind in the context's order. (Kinds come from the backends; every device braid lists runs
// every op LeNet needs, or the backend reports the op unsupported at the first step.)
braid::Device best_device(const braid::Context& ctx) {
  auto rank = [](braid_device_kind k) {
    switch (k) {
      case BRAID_DEVICE_GPU_DISCRETE: return 0;
      case BRAID_DEVICE_GPU_INTEGRATED: return 1;
      case BRAID_DEVICE_GPU_VIRTUAL: return 2;
      case BRAID_DEVICE_CPU: return 3;
      default: return 4;
    }
  };
  braid::Device best = 0;
  for (braid::Device d : ctx.devices())
    if (rank(ctx.device_info(d).kind) < rank(ctx.device_info(best).kind)) best = d;
  return best;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

struct EpochResult {
  double seconds, train_loss, test_accuracy, loss_first, loss_last;
  int64_t batches;
  double steady_samples_per_s;  // after the epoch's first batch (0 with one batch)
  uint64_t peak_bytes;          // the device's peak allocated bytes during the epoch's training
};

// Raw float32 of every parameter, in Model::params() order (lenet.h gives the shapes).
void save_params(const lenet::Model& m, const std::string& path) {
  std::FILE* f = std::fopen(path.c_str(), "wb");
  if (f == nullptr) throw std::runtime_error("--save-init: cannot create " + path + ": " + std::strerror(errno));
  bool ok = true;
  for (const braid::Tensor& p : m.params()) {
    const std::vector<float> v = p.to_vector<float>();
    ok = ok && std::fwrite(v.data(), sizeof(float), v.size(), f) == v.size();
  }
  if (std::fclose(f) != 0 || !ok) throw std::runtime_error("--save-init: cannot write " + path);
}

// The scalars' values on the host; with a process group, each is first averaged over the ranks (one
// collective for them all). A rank's losses are means over its own rows and every rank's part is as
// large, so the mean over the ranks is the mean over the global batch.
std::vector<double> rank_means(const std::vector<braid::Tensor>& scalars, const braid::ProcessGroup* group) {
  if (scalars.empty()) return {};
  std::vector<braid::Tensor> columns;
  for (const braid::Tensor& s : scalars) columns.push_back(braid::reshape(s, {1}));
  braid::Tensor all = braid::concat(columns, 0);
  if (group) group->allreduce(all, BRAID_COLLECTIVE_AVG);
  const std::vector<float> v = all.to_vector<float>();
  return {v.begin(), v.end()};
}

double mean_of(std::span<const double> values) {
  double s = 0;
  for (double v : values) s += v;
  return values.empty() ? 0.0 : s / static_cast<double>(values.size());
}

int run(const Options& opt) {
  braid::Context ctx;
  const braid::Autocast amp(ctx, opt.amp);  // this thread's; each replica's thread sets its own
  if (opt.list) {
    for (braid::Device d : ctx.devices()) std::printf("%s\t%s\n", ctx.device_info(d).id, ctx.device_info(d).name);
    return 0;
  }
  if (ctx.device_count() == 0) {
    std::fprintf(stderr, "braid-lenet: no device found\n");
    return 1;
  }
  std::vector<braid::Device> devs;
  for (const std::string& name : opt.devices) devs.push_back(ctx.find_device(name));
  if (devs.empty()) devs.push_back(opt.device.empty() ? best_device(ctx) : ctx.find_device(opt.device));
  if (!opt.weights.empty() && opt.weights.size() != devs.size()) {
    std::fprintf(stderr, "braid-lenet: --weights needs one weight per device of --devices\n");
    return 2;
  }
  const braid::Device dev = devs[0];
  std::string ids = ctx.device_info(dev).id;
  for (size_t i = 1; i < devs.size(); ++i) ids += std::string(",") + ctx.device_info(devs[i]).id;
  const braid_device_info info = ctx.device_info(dev);
  ctx.set_seed(opt.seed + 1);
  // --dist: this process is one rank of a job; its part of each global batch is batch_size / ranks rows.
  samples::Ranks job;
  if (!samples::join_ranks(ctx, opt.dist, opt.batch_size, "braid-lenet", job)) return 2;
  const std::unique_ptr<braid::ProcessGroup>& group = job.group;
  const int32_t rank = job.rank, ranks = job.size;
  if (group) {
    if (opt.hybridize || !opt.export_prefix.empty() || !opt.save_init.empty()) {
      std::fprintf(stderr,
                   "braid-lenet: --dist trains with the Trainer: not with --hybridize, --export, --save-init\n");
      return 2;
    }
  }
  const int64_t local_batch = opt.batch_size / ranks;

  braid::Dataset train_set, test_set;
  try {
    train_set = braid::Dataset(ctx, BRAID_SPLIT_TRAIN, "fashion-mnist", opt.data_dir);
    test_set = braid::Dataset(ctx, BRAID_SPLIT_TEST, "fashion-mnist", opt.data_dir);
  } catch (const braid::Error& e) {
    if (e.status() != BRAID_ERR_NOT_FOUND) throw;
    std::fprintf(stderr, "braid-lenet: %s\n", e.what());
    return 77;
  }
  // With --dist every rank reads the same shuffled epoch and takes its part: batch b of the parts together is
  // batch b of one process's iterator of the global batch size.
  braid::BatchIterator train(train_set, {.batch_size = local_batch,
                                         .shuffle = true,
                                         .seed = opt.seed,
                                         .device = dev,
                                         .num_parts = ranks,
                                         .part_index = rank});
  braid::BatchIterator test(test_set, {.batch_size = 1000, .shuffle = false, .device = dev});
  const int64_t per_epoch = opt.batches > 0 ? std::min(opt.batches, train.batches()) : train.batches();

  std::fprintf(stderr, "LeNet on %s (%s), %d epochs of %lld batches of %lld, lr %g\n", ids.c_str(), info.name,
               opt.epochs, static_cast<long long>(per_epoch), static_cast<long long>(opt.batch_size), opt.lr);
  const lenet::Model model = lenet::init(ctx, dev, opt.init_std);
  // Data parallelism (--devices): one replica per device, all starting from the first one's draws.
  std::vector<lenet::Model> replicas{model};
  for (size_t i = 1; i < devs.size(); ++i) replicas.push_back(lenet::replicate_to(model, devs[i]));
  std::vector<double> weights = opt.weights;
  if (opt.auto_weights && devs.size() > 1) {
    braid::Batch b = train.next();
    weights = samples::calibrate(ctx, devs, b.images, b.labels,
                                 [&](size_t r, const braid::Tensor& x, const braid::Tensor& y) {
                                   const braid::Autocast replica_amp(ctx, opt.amp);
                                   lenet::shard_backward(ctx, replicas[r], x, y);
                                 });
    while (train.next()) {  // restart the epoch: the run sees the batches it would without calibration
    }
    std::fprintf(stderr, "split (rows of %lld):", static_cast<long long>(opt.batch_size));
    for (double w : weights) std::fprintf(stderr, " %.1f", w);
    std::fprintf(stderr, "\n");
    samples::drop_idle(devs, replicas, weights);
  }
  std::unique_ptr<braid::Trainer> trainer;
  if (devs.size() > 1 || group) {
    std::vector<std::vector<braid::Tensor>> params;
    for (const lenet::Model& r : replicas) params.push_back(r.params());
    braid_trainer_options to = BRAID_TRAINER_OPTIONS_INIT;
    to.optimizer.learning_rate = opt.lr;
    trainer = std::make_unique<braid::Trainer>(params, to);
    // Every rank starts from rank 0's parameters (broadcast here) and sums its gradients across the ranks.
    if (group) braid::set_process_group(*trainer, *group);
  }
  // One data-parallel step: the batch split over the devices, each shard's summed loss back-propagated
  // on its replica, the Trainer's allreduce (over the devices, then the ranks) and update. Returns the
  // mean loss of this process's rows, on dev.
  auto parallel_step = [&](const braid::Tensor& images, const braid::Tensor& labels) {
    const std::vector<braid::Tensor> xs = braid::split_and_load(images, devs, weights);
    const std::vector<braid::Tensor> ys = braid::split_and_load(labels, devs, weights);
    std::vector<braid::Tensor> losses(devs.size());
    samples::for_each_replica(devs.size(), [&](size_t r) {
      const braid::Autocast replica_amp(ctx, opt.amp);
      if (xs[r].numel() == 0) {  // a weight of 0, or a short last batch
        samples::zero_grads(ctx, replicas[r].params());
        return;
      }
      losses[r] = braid::copy_to(lenet::shard_backward(ctx, replicas[r], xs[r], ys[r]), dev);
    });
    braid::Tensor total;
    for (const braid::Tensor& l : losses)
      if (l) total = total ? total + l : l;
    const double rows = static_cast<double>(labels.numel());
    trainer->step(rows * ranks);  // the global batch: every rank's parts are as large (equal parts)
    return total / rows;
  };
  if (opt.hybridize && trainer) {
    std::fprintf(stderr, "braid-lenet: --hybridize trains on one device (not with --devices)\n");
    return 2;
  }
  // --hybridize: the whole step as a graph, traced on its first call with each batch shape, and the
  // evaluation's forward pass likewise (braid::Hybrid; docs/GRAPH.md).
  braid::Hybrid hybrid_step(ctx, 2, 1, [&](std::span<const braid::Tensor> in) {
    return std::vector<braid::Tensor>{lenet::train_step(ctx, model, in[0], in[1], opt.lr)};
  });
  braid::Hybrid hybrid_correct(ctx, 2, 1, [&](std::span<const braid::Tensor> in) {
    return std::vector<braid::Tensor>{lenet::correct(model, in[0], in[1])};
  });
  auto step = [&](const braid::Tensor& images, const braid::Tensor& labels) {
    if (trainer) return parallel_step(images, labels);
    if (opt.hybridize) return hybrid_step({images, labels})[0];
    return lenet::train_step(ctx, model, images, labels, opt.lr);
  };
  auto correct = [&](const braid::Tensor& images, const braid::Tensor& labels) {
    return opt.hybridize ? hybrid_correct({images, labels})[0] : lenet::correct(model, images, labels);
  };
  if (!opt.save_init.empty()) save_params(model, opt.save_init);
  std::vector<braid::Tensor> step_losses;  // the run's first opt.step_losses losses, read at the end
  braid::Batch first_batch;
  samples::Progress progress;
  std::vector<EpochResult> results;
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    ctx.wait_all();
    ctx.reset_peak(dev);
    const auto t0 = std::chrono::steady_clock::now();
    // The loss sum stays on the device: reading it every step would wait for each step to finish.
    braid::Tensor loss_sum = braid::Tensor::zeros(ctx, dev, BRAID_FLOAT32, {});
    std::vector<braid::Tensor> first, last;  // device scalars, read after the epoch
    int64_t n = 0, rows = 0, rows_first = 0;
    auto t_first = t0;
    bool epoch_ended = false;  // the iterator returned its end-of-epoch marker
    while (n < per_epoch) {
      braid::Batch b = train.next();
      if (!b) {
        epoch_ended = true;
        break;
      }
      braid::Tensor loss = step(b.images, b.labels);
      loss_sum = loss_sum + loss;
      if (first.size() < 5) first.push_back(loss);
      if (static_cast<int64_t>(step_losses.size()) < opt.step_losses) step_losses.push_back(loss);
      last.push_back(loss);
      if (last.size() > 5) last.erase(last.begin());
      ++n;
      if (n == 1) {
        if (!first_batch.images) first_batch = b;  // to find the step's graph (--hybridize) at the end
        // The first batch pays the warm-up (pools, first-touch pages): steady throughput is timed after it.
        ctx.wait_all();
        t_first = std::chrono::steady_clock::now();
        rows_first = b.labels.numel();
      }
      rows += b.labels.numel();
      progress.update(epoch, n, per_epoch);
    }
    if (!epoch_ended)  // skip the rest of a short epoch and its end marker: the next call starts a new one
      while (train.next()) {}
    std::vector<braid::Tensor> read{loss_sum};
    read.insert(read.end(), first.begin(), first.end());
    read.insert(read.end(), last.begin(), last.end());
    const std::vector<double> means = rank_means(read, group.get());
    const double loss = means[0] / static_cast<double>(std::max<int64_t>(n, 1));
    const std::span<const double> first_means(means.data() + 1, first.size()),
        last_means(means.data() + 1 + first.size(), last.size());
    ctx.wait_all();
    const double seconds = seconds_since(t0), steady_seconds = seconds_since(t_first);
    const uint64_t peak = ctx.memory_stats(dev).peak_allocated_bytes;
    braid::Tensor hits = braid::Tensor::zeros(ctx, dev, BRAID_FLOAT32, {});
    int64_t seen = 0;
    int64_t tested = 0;
    for (braid::Batch b; (b = test.next());) {
      hits = hits + correct(b.images, b.labels);
      seen += b.labels.numel();
      if (++tested == opt.test_batches) {
        while (test.next()) {  // skip the rest, so the next epoch's pass starts at the first batch
        }
        break;
      }
    }
    const double acc =
        static_cast<double>(hits.to_vector<float>()[0]) / static_cast<double>(std::max<int64_t>(seen, 1));
    const double steady = n > 1 ? static_cast<double>(rows - rows_first) / steady_seconds : 0.0;
    results.push_back({seconds, loss, acc, mean_of(first_means), mean_of(last_means), n, steady, peak});
    progress.end_epoch();
    std::fprintf(stderr, "epoch %d: %.2f s, train loss %.4f, test accuracy %.4f\n", epoch, seconds, loss, acc);
  }
  if (!opt.export_prefix.empty()) {
    // The forward pass for batches of the test iterator's 1000 images, traced and saved (docs/GRAPH.md).
    braid::Batch b = test.next();
    while (test.next()) {}
    const std::vector<braid::Tensor> in{b.images};
    braid::Graph g = braid::Graph::trace(ctx, in, [&](std::span<const braid::Tensor> x) {
      return std::vector<braid::Tensor>{lenet::forward(model, x[0])};
    });
    g.optimize();
    g.save(opt.export_prefix + ".json", opt.export_prefix + ".safetensors");
    std::fprintf(stderr, "exported the forward pass to %s.json and %s.safetensors\n", opt.export_prefix.c_str(),
                 opt.export_prefix.c_str());
  }
  // What the hybridized step became: its kernels and what memory planning made of its intermediates.
  braid_graph_info step_graph{};
  if (opt.hybridize && first_batch.images) {
    step_graph = hybrid_step.graph({first_batch.images, first_batch.labels}).info();
    std::fprintf(stderr,
                 "step graph (batch %lld): %d kernels, %d per run after fusion, %d parameters; workspace %.1f MB "
                 "for %.1f MB of intermediates\n",
                 static_cast<long long>(first_batch.labels.numel()), step_graph.num_nodes, step_graph.kernels_per_run,
                 step_graph.num_params, double(step_graph.workspace_bytes) / 1e6,
                 double(step_graph.intermediate_bytes) / 1e6);
  }
  const std::vector<double> step_loss_means = rank_means(step_losses, group.get());  // a collective: every rank
  if (opt.json) {
    std::printf("{\"device\": \"%s\", \"batch_size\": %lld, \"lr\": %g, \"hybridize\": %s, \"amp\": \"%s\", ",
                ids.c_str(), static_cast<long long>(opt.batch_size), opt.lr, opt.hybridize ? "true" : "false",
                samples::amp_name(opt.amp));
    if (group) std::printf("\"rank\": %d, \"ranks\": %d, ", rank, ranks);
    if (opt.hybridize)
      std::printf(
          "\"step_graph\": {\"kernels\": %d, \"kernels_per_run\": %d, \"workspace_bytes\": %llu, "
          "\"intermediate_bytes\": %llu}, ",
          step_graph.num_nodes, step_graph.kernels_per_run, static_cast<unsigned long long>(step_graph.workspace_bytes),
          static_cast<unsigned long long>(step_graph.intermediate_bytes));
    std::printf("\"epochs\": [");
    for (size_t i = 0; i < results.size(); ++i)
      std::printf(
          "%s{\"epoch\": %zu, \"batches\": %lld, \"seconds\": %.4f, \"samples_per_s\": %.3f, "
          "\"steady_samples_per_s\": %.3f, \"train_loss\": %.6f, \"test_accuracy\": %.4f, "
          "\"loss_first\": %.6f, \"loss_last\": %.6f, \"peak_bytes\": %llu}",
          i ? ", " : "", i + 1, static_cast<long long>(results[i].batches), results[i].seconds,
          static_cast<double>(results[i].batches * opt.batch_size) / results[i].seconds,
          results[i].steady_samples_per_s, results[i].train_loss, results[i].test_accuracy, results[i].loss_first,
          results[i].loss_last, static_cast<unsigned long long>(results[i].peak_bytes));
    std::printf("]");
    if (opt.step_losses > 0) {
      std::printf(", \"step_losses\": [");
      for (size_t i = 0; i < step_losses.size(); ++i) std::printf("%s%.9g", i ? ", " : "", step_loss_means[i]);
      std::printf("]");
    }
    std::printf("}\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    return run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "\nbraid-lenet: %s\n", e.what());
    return 1;
  }
}
