// braid-resnet: the chapter's ResNet-18 trained on Fashion-MNIST with braid's Trainer over a device
// list (data parallelism: each batch split over the devices, gradients all-reduced in buckets while
// backward runs, every replica updated). Prints per epoch the time, samples/s, training loss and test
// accuracy.
//
//   braid-resnet [--devices LIST] [--weights LIST|auto] [--epochs N] [--batches N] [--batch-size N]
//                [--lr X] [--seed N] [--test-batches N] [--data-dir DIR] [--json] [--dist] [--amp bf16|off]
//
// An option's value may follow it (`--epochs 2`) or be joined to it (`--epochs=2`); tools/common/cli.h
// reads the command line.
//
//   --devices LIST  comma-separated device ids (default cpu:0); e.g. cpu:0,cpu:1 with BRAID_CPU_DEVICES=2
//   --weights LIST  the split's weights, one per device; "auto" measures each device's samples/s on
//                   this model first (a short calibration) and splits by it; default: even
//   --batches N     at most N training batches per epoch (0 = all); short runs for benchmarks and CI
//   --batch-size N  global batch (default 256); --lr X (default 0.1, SGD)
//   --test-batches N  evaluate N test batches of 256 (0 = all; default 0)
//   --json          one JSON object on stdout at the end
//   --amp bf16      automatic mixed precision (docs/AMP.md): convolutions and the dense layer round their
//                   float32 operands to bfloat16 and accumulate in float32; weights stay float32
//   --dist          data parallelism across processes too (`braid-run -n 2 braid-resnet --dist`, mpirun,
//                   srun; docs/DISTRIBUTED.md): --batch-size is the global batch, a multiple of the
//                   ranks; each rank reads its part of every epoch, the Trainer sums the gradients over
//                   the process's devices and then across the ranks, and the reported loss is the mean
//                   over every rank's rows. Before each evaluation the batch norms' running statistics
//                   are averaged over the ranks, so every rank evaluates the same model
//
// Progress goes to stderr: a bar per epoch on a terminal, plain lines at each quarter otherwise.
//
// Exit status: 0 on success, 1 on an error, 2 on bad arguments, 77 when the dataset is missing.
#include <algorithm>
#include <chrono>
#include <climits>
#include <cstdint>
#include <cstdio>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "../common/amp.h"
#include "../common/calibrate.h"
#include "../common/progress.h"
#include "../common/ranks.h"
#include "../common/replicas.h"
#include "cli.h"
#include "resnet.h"

namespace {

struct Options {
  std::vector<std::string> devices{"cpu:0"};
  std::vector<double> weights;
  bool auto_weights = false;
  int epochs = 1;
  int64_t batches = 0, batch_size = 256, test_batches = 0;
  double lr = 0.1;
  uint64_t seed = 0;
  std::string data_dir;
  bool json = false;
  bool dist = false;
  braid_dtype amp = BRAID_FLOAT32;  // --amp
};

constexpr const char* kUsage =
    "usage: braid-resnet [--devices LIST] [--weights LIST|auto] [--epochs N] [--batches N] [--batch-size N]\n"
    "                    [--lr X] [--seed N] [--test-batches N] [--data-dir DIR] [--json] [--dist]\n"
    "                    [--amp bf16|off] [--help] [--version]\n";

Options parse(int argc, char** argv) {
  enum {
    kDevices = CLI_FIRST,
    kWeights,
    kEpochs,
    kBatches,
    kBatchSize,
    kTestBatches,
    kSeed,
    kLr,
    kDataDir,
    kJson,
    kDist,
    kAmp
  };
  static const option options[] = {
      {"devices", required_argument, nullptr, kDevices},
      {"weights", required_argument, nullptr, kWeights},
      {"epochs", required_argument, nullptr, kEpochs},
      {"batches", required_argument, nullptr, kBatches},
      {"batch-size", required_argument, nullptr, kBatchSize},
      {"test-batches", required_argument, nullptr, kTestBatches},
      {"seed", required_argument, nullptr, kSeed},
      {"lr", required_argument, nullptr, kLr},
      {"data-dir", required_argument, nullptr, kDataDir},
      {"json", no_argument, nullptr, kJson},
      {"dist", no_argument, nullptr, kDist},
      {"amp", required_argument, nullptr, kAmp},
      CLI_STANDARD_OPTIONS,
      {},
  };
  cli_parser cli = cli_parser_init(
      "braid-resnet", kUsage,
      "Trains the chapter's ResNet-18 on Fashion-MNIST over a device list (docs/PARALLEL.md).\n", options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kDevices: o.devices = cli_list(cli, cli.value); break;
      case kWeights: cli_weights(cli, o.weights, o.auto_weights); break;
      case kEpochs: o.epochs = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kBatches: o.batches = cli_int(&cli, 0, INT64_MAX); break;
      case kBatchSize: o.batch_size = cli_int(&cli, 1, INT64_MAX); break;
      case kTestBatches: o.test_batches = cli_int(&cli, 0, INT64_MAX); break;
      case kSeed: o.seed = static_cast<uint64_t>(cli_int(&cli, 0, INT64_MAX)); break;
      case kLr: o.lr = cli_real(&cli, 0); break;
      case kDataDir: o.data_dir = cli.value; break;
      case kJson: o.json = true; break;
      case kDist: o.dist = true; break;
      case kAmp: o.amp = samples::parse_amp(cli, cli.value); break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  if (!o.weights.empty() && o.weights.size() != o.devices.size())
    cli_fail(&cli, "--weights needs one weight per device");
  return o;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

int run(const Options& opt) {
  braid::Context ctx;
  const braid::Autocast amp(ctx, opt.amp);  // this thread's; each replica's thread sets its own
  std::vector<braid::Device> devs;
  std::string ids;
  for (const std::string& name : opt.devices) {
    devs.push_back(ctx.find_device(name));
    if (!ids.empty()) ids += ',';
    ids += name;
  }
  ctx.set_seed(opt.seed + 1);
  // --dist: this process is one rank of a job; its part of each global batch is batch_size / ranks rows.
  samples::Ranks job;
  if (!samples::join_ranks(ctx, opt.dist, opt.batch_size, "braid-resnet", job)) return 2;
  const std::unique_ptr<braid::ProcessGroup>& group = job.group;
  const int32_t rank = job.rank, ranks = job.size;
  braid::Dataset train_set, test_set;
  try {
    train_set = braid::Dataset(ctx, BRAID_SPLIT_TRAIN, "fashion-mnist", opt.data_dir);
    test_set = braid::Dataset(ctx, BRAID_SPLIT_TEST, "fashion-mnist", opt.data_dir);
  } catch (const braid::Error& e) {
    if (e.status() != BRAID_ERR_NOT_FOUND) throw;
    std::fprintf(stderr, "braid-resnet: %s\n", e.what());
    return 77;
  }
  const braid::Device dev = devs[0];
  braid::BatchIterator train(train_set, {.batch_size = opt.batch_size / ranks,
                                         .shuffle = true,
                                         .seed = opt.seed,
                                         .device = dev,
                                         .num_parts = ranks,
                                         .part_index = rank});
  braid::BatchIterator test(test_set, {.batch_size = 256, .shuffle = false, .device = dev});
  const int64_t per_epoch = opt.batches > 0 ? std::min(opt.batches, train.batches()) : train.batches();

  std::vector<resnet::Model> replicas{resnet::init(ctx, dev)};
  for (size_t i = 1; i < devs.size(); ++i) replicas.push_back(resnet::replicate_to(replicas[0], devs[i]));
  // Forward and backward of replica r on its shard: the summed loss, so the Trainer's step(global
  // batch) averages over the whole batch.
  auto shard_backward = [&](size_t r, const braid::Tensor& x, const braid::Tensor& y) {
    braid::Tensor loss;
    {
      braid::AutogradScope record(ctx);
      loss = braid::sum(braid::softmax_cross_entropy(resnet::forward(replicas[r], x, true), y));
    }
    braid::backward(loss);
    return loss;
  };

  std::vector<double> weights = opt.weights;
  if (opt.auto_weights && devs.size() > 1) {
    braid::Batch b = train.next();
    weights = samples::calibrate(
        ctx, devs, b.images, b.labels,
        [&](size_t r, const braid::Tensor& xs, const braid::Tensor& ys) {
          const braid::Autocast replica_amp(ctx, opt.amp);
          shard_backward(r, xs, ys);
        },
        1);
    while (train.next()) {  // restart the epoch, so the run sees the same batches as without calibration
    }
    samples::drop_idle(devs, replicas, weights);
  }
  std::vector<std::vector<braid::Tensor>> params;
  for (const resnet::Model& r : replicas) params.push_back(r.params());
  braid_trainer_options to = BRAID_TRAINER_OPTIONS_INIT;
  to.optimizer.learning_rate = opt.lr;
  braid::Trainer trainer(params, to);
  if (group)
    braid::set_process_group(trainer, *group);  // rank 0's parameters everywhere, gradients summed across ranks
  std::string split = "even";
  if (!weights.empty()) {
    split.clear();
    for (double w : weights) {
      if (!split.empty()) split += ',';
      split += std::to_string(w);
    }
  }
  std::fprintf(stderr, "ResNet-18 on %s (split %s), %d epochs of %lld batches of %lld, lr %g\n", ids.c_str(),
               split.c_str(), opt.epochs, static_cast<long long>(per_epoch), static_cast<long long>(opt.batch_size),
               opt.lr);

  struct EpochResult {
    double seconds, samples_per_s, loss, accuracy, steady_samples_per_s;  // steady: after the first batch
  };
  std::vector<EpochResult> results;
  samples::Progress progress;
  for (int epoch = 1; epoch <= opt.epochs; ++epoch) {
    const auto t0 = std::chrono::steady_clock::now();
    braid::Tensor loss_sum = braid::Tensor::zeros(ctx, dev, BRAID_FLOAT32, {});
    int64_t n = 0, rows = 0, rows_first = 0;
    auto t_first = t0;
    bool ended = false;
    while (n < per_epoch) {
      braid::Batch b = train.next();
      if (!b) {
        ended = true;
        break;
      }
      const std::vector<braid::Tensor> xs = braid::split_and_load(b.images, devs, weights);
      const std::vector<braid::Tensor> ys = braid::split_and_load(b.labels, devs, weights);
      std::vector<braid::Tensor> losses(devs.size());
      samples::for_each_replica(devs.size(), [&](size_t r) {
        const braid::Autocast replica_amp(ctx, opt.amp);
        if (xs[r].numel() > 0)
          losses[r] = braid::copy_to(shard_backward(r, xs[r], ys[r]), dev);
        else
          samples::zero_grads(ctx, replicas[r].params());  // it still takes part in the allreduce
      });
      for (const braid::Tensor& l : losses)
        if (l) loss_sum = loss_sum + l;
      rows += b.labels.numel();
      trainer.step(static_cast<double>(b.labels.numel() * ranks));  // the global batch (equal parts)
      ++n;
      if (n == 1) {
        // The first batch pays the warm-up (pools, first-touch pages; a calibrated run paid it while
        // calibrating): steady throughput is timed after it.
        ctx.wait_all();
        t_first = std::chrono::steady_clock::now();
        rows_first = rows;
      }
      progress.update(epoch, n, per_epoch);
    }
    if (!ended)
      while (train.next()) {}
    if (group) {
      // Every rank's rows: the loss summed over the ranks' equal parts, and the running statistics averaged.
      group->allreduce(loss_sum, BRAID_COLLECTIVE_AVG);
      for (const braid::Tensor& s : replicas[0].running_stats()) group->allreduce(s, BRAID_COLLECTIVE_AVG);
    }
    const double loss =
        static_cast<double>(loss_sum.to_vector<float>()[0]) / static_cast<double>(std::max<int64_t>(rows, 1));
    ctx.wait_all();
    const double seconds = seconds_since(t0), steady_seconds = seconds_since(t_first);
    braid::Tensor hits = braid::Tensor::zeros(ctx, dev, BRAID_FLOAT32, {});
    int64_t seen = 0, tested = 0;
    for (braid::Batch b; (b = test.next());) {
      const braid::Tensor pred = braid::argmax(resnet::forward(replicas[0], b.images, false), 1);
      hits = hits + braid::sum(braid::cast(braid::equal(pred, braid::cast(b.labels, BRAID_INT64)), BRAID_FLOAT32));
      seen += b.labels.numel();
      if (++tested == opt.test_batches) {
        while (test.next()) {}
        break;
      }
    }
    const double acc =
        static_cast<double>(hits.to_vector<float>()[0]) / static_cast<double>(std::max<int64_t>(seen, 1));
    const double steady = n > 1 ? static_cast<double>(rows - rows_first) / steady_seconds : 0.0;
    results.push_back({seconds, static_cast<double>(rows * ranks) / seconds, loss, acc, steady * ranks});
    progress.end_epoch();
    std::fprintf(stderr, "epoch %d: %.2f s, %.1f samples/s, train loss %.4f, test accuracy %.4f\n", epoch, seconds,
                 results.back().samples_per_s, loss, acc);
  }
  if (opt.json) {
    std::printf("{\"devices\": \"%s\", \"split\": \"%s\", \"batch_size\": %lld, \"amp\": \"%s\", ", ids.c_str(),
                split.c_str(), static_cast<long long>(opt.batch_size), samples::amp_name(opt.amp));
    if (group) std::printf("\"rank\": %d, \"ranks\": %d, ", rank, ranks);
    std::printf("\"epochs\": [");
    for (size_t i = 0; i < results.size(); ++i)
      std::printf(
          "%s{\"seconds\": %.4f, \"samples_per_s\": %.3f, \"steady_samples_per_s\": %.3f, "
          "\"train_loss\": %.6f, \"test_accuracy\": %.4f}",
          i ? ", " : "", results[i].seconds, results[i].samples_per_s, results[i].steady_samples_per_s, results[i].loss,
          results[i].accuracy);
    std::printf("]}\n");
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    return run(opt);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "braid-resnet: %s\n", e.what());
    return 1;
  }
}
