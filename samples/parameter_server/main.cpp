// The chapter's parameter server: an MLP trained on Fashion-MNIST by several worker processes whose
// parameters live in KVStore server processes, with MXNet's dist_sync or dist_async
// (docs/DISTRIBUTED.md, "KVStore across processes"). Run it under braid-run:
//
//   build/bin/braid-run -n 2 --servers 1 build/bin/braid-sample-ps --kvstore dist_sync
//   build/bin/braid-run -n 2 --servers 1 build/bin/braid-sample-ps --kvstore dist_async
//
// Each worker computes gradients on its own batches (a different shuffle per worker), pushes them
// (one key per parameter) and pulls the weights the servers' SGD made. dist_sync applies one update per
// key per round, with the sum over workers; dist_async applies each worker's push as it arrives, so a
// worker's gradient may have been taken at older weights than it is applied to. After each epoch rank 0
// tests the servers' weights. Options:
//   --kvstore TYPE    dist_sync (default), dist_device_sync or dist_async
//   --epochs N        (1)        --batches N    per worker per epoch (0: the worker's share of an epoch)
//   --batch-size N    per worker (128)          --lr X       (0.1)       --seed N    (0)
//   --test-batches N  of 1000 images (0: all)   --data-dir DIR           --json      a summary line on rank 0
//   --min-accuracy X  fail (exit 1) when the last test accuracy is below X (the ctest's check that it learns)
// Exit status: 0 on success, 1 on an error, 2 for a bad command line, 77 when the dataset is missing.
#include <braid.hpp>

#include <chrono>
#include <climits>
#include <cstdio>
#include <string>
#include <vector>

#include "cli.h"

namespace {

struct Options {
  std::string kvstore = "dist_sync", data_dir;
  int epochs = 1;
  int64_t batches = 0, batch_size = 128, test_batches = 0;
  double lr = 0.1, min_accuracy = 0;
  uint64_t seed = 0;
  bool json = false;
};

Options parse(int argc, char** argv) {
  enum { kKvstore = CLI_FIRST, kEpochs, kBatches, kBatchSize, kLr, kSeed, kTestBatches, kDataDir, kJson, kMinAccuracy };
  static const option options[] = {{"kvstore", required_argument, nullptr, kKvstore},
                                   {"epochs", required_argument, nullptr, kEpochs},
                                   {"batches", required_argument, nullptr, kBatches},
                                   {"batch-size", required_argument, nullptr, kBatchSize},
                                   {"lr", required_argument, nullptr, kLr},
                                   {"seed", required_argument, nullptr, kSeed},
                                   {"test-batches", required_argument, nullptr, kTestBatches},
                                   {"data-dir", required_argument, nullptr, kDataDir},
                                   {"json", no_argument, nullptr, kJson},
                                   {"min-accuracy", required_argument, nullptr, kMinAccuracy},
                                   CLI_STANDARD_OPTIONS,
                                   {}};
  cli_parser cli = cli_parser_init(
      "braid-sample-ps",
      "usage: braid-run -n W --servers S braid-sample-ps [--kvstore dist_sync|dist_device_sync|dist_async] "
      "[--epochs N] [--batches N] [--batch-size N] [--lr X] [--seed N] [--test-batches N] [--data-dir DIR] [--json] "
      "[--min-accuracy X]\n",
      "Trains an MLP on Fashion-MNIST with a parameter server (samples/parameter_server/main.cpp).\n", options);
  Options o;
  for (int opt; (opt = cli_next(&cli, argc, argv)) != -1;) {
    switch (opt) {
      case kKvstore: o.kvstore = cli.value; break;
      case kEpochs: o.epochs = static_cast<int>(cli_int(&cli, 1, INT_MAX)); break;
      case kBatches: o.batches = cli_int(&cli, 0, INT64_MAX); break;
      case kBatchSize: o.batch_size = cli_int(&cli, 1, 60000); break;
      case kLr: o.lr = cli_real(&cli, 0); break;
      case kSeed: o.seed = static_cast<uint64_t>(cli_int(&cli, 0, INT64_MAX)); break;
      case kTestBatches: o.test_batches = cli_int(&cli, 0, INT64_MAX); break;
      case kDataDir: o.data_dir = cli.value; break;
      case kJson: o.json = true; break;
      case kMinAccuracy: o.min_accuracy = cli_real(&cli, 1); break;
    }
  }
  if (optind < argc) cli_fail(&cli, "unexpected argument '%s'", argv[optind]);
  return o;
}

braid::Tensor forward(const std::vector<braid::Tensor>& p, const braid::Tensor& images) {
  const braid::Tensor x = braid::reshape(images, {-1, 784});
  return braid::matmul(braid::relu(braid::matmul(x, p[0]) + p[1]), p[2]) + p[3];
}

}  // namespace

int main(int argc, char** argv) {
  const Options opt = parse(argc, argv);
  try {
    braid::Context ctx;
    const braid::Device cpu = ctx.find_device("cpu:0");
    braid::Dataset train_set, test_set;
    try {
      train_set = braid::Dataset(ctx, BRAID_SPLIT_TRAIN, "fashion-mnist", opt.data_dir);
      test_set = braid::Dataset(ctx, BRAID_SPLIT_TEST, "fashion-mnist", opt.data_dir);
    } catch (const braid::Error& e) {
      if (e.status() != BRAID_ERR_NOT_FOUND) throw;
      std::fprintf(stderr, "braid-sample-ps: %s (install dataset-fashion-mnist)\n", e.what());
      return 77;
    }
    braid::KVStore kv(ctx, opt.kvstore.c_str());
    const braid_kvstore_info info = kv.info();
    const int rank = info.rank, workers = info.num_workers;
    // Every worker makes the parameters; only rank 0's values are stored, and everyone pulls them.
    ctx.set_seed(opt.seed + static_cast<uint64_t>(rank));
    const std::vector<std::vector<int64_t>> shapes{{784, 256}, {256}, {256, 10}, {10}};
    std::vector<braid::Tensor> params;
    for (size_t k = 0; k < shapes.size(); ++k) {
      params.push_back(shapes[k].size() == 2
                           ? braid::Tensor::random_normal(ctx, cpu, BRAID_FLOAT32, shapes[k], 0.0, 0.05)
                           : braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT32, shapes[k]));
      kv.init(static_cast<int64_t>(k), params[k]);
      kv.pull(static_cast<int64_t>(k), params[k]);
      braid::attach_grad(params[k]);
    }
    // The servers' SGD sees the sum over workers (dist_sync) or one worker's gradient (dist_async).
    braid_optimizer_params sgd = BRAID_OPTIMIZER_PARAMS_INIT;
    sgd.learning_rate = opt.lr;
    const bool sync = opt.kvstore != "dist_async";
    sgd.rescale_grad = 1.0 / static_cast<double>(opt.batch_size * (sync ? workers : 1));
    kv.set_optimizer(sgd);

    braid::BatchIterator train(train_set, {.batch_size = opt.batch_size,
                                           .shuffle = true,
                                           .seed = opt.seed * 1000 + static_cast<uint64_t>(rank),
                                           .drop_last = true,
                                           .device = cpu});
    braid::BatchIterator test(test_set, {.batch_size = 1000, .shuffle = false, .device = cpu});
    const int64_t share = 60000 / (opt.batch_size * workers);
    const int64_t per_epoch = opt.batches > 0 ? std::min(opt.batches, share) : share;
    double loss = 0, accuracy = 0, samples_per_s = 0;
    for (int epoch = 0; epoch < opt.epochs; ++epoch) {
      const auto t0 = std::chrono::steady_clock::now();
      braid::Tensor loss_sum = braid::Tensor::zeros(ctx, cpu, BRAID_FLOAT32, {});
      int64_t n = 0;
      for (braid::Batch b; n < per_epoch && (b = train.next()); ++n) {
        braid::Tensor l;
        {
          braid::AutogradScope record(ctx);
          l = braid::sum(braid::softmax_cross_entropy(forward(params, b.images), b.labels));
        }
        braid::backward(l);
        loss_sum = loss_sum + l;
        for (size_t k = 0; k < params.size(); ++k) kv.push(static_cast<int64_t>(k), braid::grad(params[k]));
        for (size_t k = 0; k < params.size(); ++k) kv.pull(static_cast<int64_t>(k), params[k]);
      }
      while (n == per_epoch && train.next()) {  // the rest of the epoch: the next one starts afresh
      }
      loss = static_cast<double>(loss_sum.to_vector<float>()[0]) / static_cast<double>(n * opt.batch_size);
      const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      samples_per_s = static_cast<double>(n * opt.batch_size) / seconds;
      kv.barrier();  // every worker's last push is in: rank 0 tests the weights they made
      for (size_t k = 0; k < params.size(); ++k) kv.pull(static_cast<int64_t>(k), params[k]);
      int64_t hits = 0, seen = 0, tested = 0;
      for (braid::Batch b; (b = test.next());) {
        if (opt.test_batches > 0 && tested == opt.test_batches) continue;  // read the rest of the epoch
        const auto predicted = braid::argmax(forward(params, b.images), 1).to_vector<int64_t>();
        const auto labels = b.labels.to_vector<int32_t>();
        for (size_t i = 0; i < labels.size(); ++i) hits += predicted[i] == labels[i];
        seen += static_cast<int64_t>(labels.size());
        ++tested;
      }
      accuracy = static_cast<double>(hits) / static_cast<double>(std::max<int64_t>(seen, 1));
      std::printf(
          "worker %d of %d, %s: epoch %d: %lld batches in %.2f s (%.0f samples/s), train loss %.4f, test "
          "accuracy %.4f\n",
          rank, workers, opt.kvstore.c_str(), epoch, static_cast<long long>(n), seconds, samples_per_s, loss, accuracy);
    }
    if (opt.json && rank == 0)
      std::printf(
          "{\"kvstore\": \"%s\", \"workers\": %d, \"servers\": %d, \"train_loss\": %.6f, \"test_accuracy\": "
          "%.4f, \"samples_per_s_per_worker\": %.1f}\n",
          opt.kvstore.c_str(), workers, info.num_servers, loss, accuracy, samples_per_s);
    if (accuracy < opt.min_accuracy) {
      std::fprintf(stderr, "braid-sample-ps: test accuracy %.4f is below --min-accuracy %.4f\n", accuracy,
                   opt.min_accuracy);
      return 1;
    }
    return 0;
  } catch (const braid::Error& e) {
    std::fprintf(stderr, "braid-sample-ps: %s\n", e.what());
    return 1;
  }
}
