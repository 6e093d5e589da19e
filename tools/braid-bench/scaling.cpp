// Suite `scaling`: the chapter's data-parallel question asked of this machine. Samples/s of the
// chapter's LeNet and ResNet-18 (braid-lenet and braid-resnet, built next to braid-bench) on each
// device alone, then on all of them with the even split and with the split weighted by calibration
// (--weights auto), compared with the sum of the devices alone and, for CPU devices, with one CPU
// device that has every core (two devices cut from the same cores must not lose to it).
//
// Every run is a child process: the CPU devices are cut from the cores when a context is created
// (BRAID_CPU_DEVICES), and the one-device-all-cores anchor needs a different cut. The runs of one
// model alternate round by round (--repeat rounds, median of each), so drift on a shared host hits all
// of them alike.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <array>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include "bench.h"
#include "stats.h"

namespace braid::bench {
namespace {

struct ScalingModel {
  const char* name;        // braid-<name> is the sample
  const char* one_device;  // the sample's flag for a single device
  int default_batches;     // batches of 256 per run
};

constexpr ScalingModel kModels[] = {{"lenet", "--device", 60}, {"resnet", "--devices", 3}};

// Runs the sample with BRAID_CPU_DEVICES=cpu_devices and returns the steady samples/s of its (only)
// epoch: timed after the first batch, which pays the warm-up (a calibrated run pays it while
// calibrating, so counting it would favour the weighted split).
double samples_per_s(const ScalingModel& m, int batches, const std::string& args, int cpu_devices) {
  const std::string exe = beside_bench(std::string("braid-") + m.name).string();
  const std::string command = "BRAID_CPU_DEVICES=" + std::to_string(cpu_devices) + " " + shell_quote(exe) +
                              " --epochs 1 --test-batches 1 --batches " + std::to_string(batches) + " " + args +
                              " --json 2>&1";
  std::fflush(nullptr);  // the child must not inherit (and later flush) our buffered output
  FILE* pipe = ::popen(command.c_str(), "r");
  if (!pipe) throw Error("scaling: could not start " + exe);
  std::string result, tail;
  std::array<char, 4096> line{};
  while (std::fgets(line.data(), static_cast<int>(line.size()), pipe)) {
    if (line[0] == '{')
      result = line.data();  // the JSON object is the sample's last stdout line
    else
      tail = line.data();
  }
  if (::pclose(pipe) != 0 || result.empty())
    throw Error("scaling: " + command + " failed" + (tail.empty() ? std::string() : ": " + tail));
  const nlohmann::json j = nlohmann::json::parse(result, nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded() || !j.contains("epochs") || j["epochs"].empty() ||
      !j["epochs"].back().contains("steady_samples_per_s"))
    throw Error("scaling: " + command + " printed no steady_samples_per_s: " + result);
  return j["epochs"].back()["steady_samples_per_s"].get<double>();
}

std::string joined(const std::vector<std::string>& devices) {
  std::string s;
  for (const std::string& d : devices) {
    if (!s.empty()) s += ',';
    s += d;
  }
  return s;
}

}  // namespace

void suite_scaling(Run& run) {
  const std::vector<std::string> devices =
      run.options.devices.empty() ? std::vector<std::string>{"cpu:0", "cpu:1"} : run.options.devices;
  if (devices.size() < 2) {
    run.out->note("scaling", "needs two or more devices: --devices cpu:0,cpu:1 (the default) or cpu:0,vulkan:0");
    return;
  }
  int cpus = 0;
  for (const std::string& d : devices) cpus += d.rfind("cpu:", 0) == 0 ? 1 : 0;
  const int cut = std::max(cpus, 1);  // BRAID_CPU_DEVICES for the runs over `devices`
  const std::string list = joined(devices);
  run.out->note("scaling", "devices " + list + " (BRAID_CPU_DEVICES=" + std::to_string(cut) +
                               "); samples/s of one epoch of --batches batches of 256 after its first batch, median "
                               "of --repeat rounds");
  for (const ScalingModel& m : kModels) {
    std::error_code ec;
    if (!std::filesystem::exists(beside_bench(std::string("braid-") + m.name), ec)) {
      run.out->note("scaling", std::string("braid-") + m.name + " is not built next to braid-bench; skipped");
      continue;
    }
    const int batches = run.options.batches > 0
                            ? (m.default_batches < 10 ? std::max(2, run.options.batches / 20) : run.options.batches)
                            : m.default_batches;
    struct Config {
      std::string name, args;
      int cpu_devices;
    };
    std::vector<Config> configs;
    if (cpus > 0) configs.push_back({"cpu:0_all_cores", std::string(m.one_device) + " cpu:0", 1});
    for (const std::string& d : devices) configs.push_back({d + "_alone", std::string(m.one_device) + " " + d, cut});
    configs.push_back({"even", "--devices " + list, cut});
    configs.push_back({"weighted", "--devices " + list + " --weights auto", cut});
    std::vector<std::vector<double>> samples(configs.size());
    try {
      for (int r = 0; r < run.repeat_or(1); ++r)
        for (size_t i = 0; i < configs.size(); ++i)
          samples[i].push_back(samples_per_s(m, batches, configs[i].args, configs[i].cpu_devices));
    } catch (const Error& e) {
      // A model that one of the devices cannot run (lavapipe's 2 GiB heap and ResNet-18 at batch 256)
      // has no comparison to make; the other models still do.
      run.out->note("scaling", std::string(m.name) + " skipped: " + e.what());
      continue;
    }
    std::vector<double> median(configs.size());
    for (size_t i = 0; i < configs.size(); ++i) median[i] = tools::summarize(samples[i]).median;

    const std::string prefix = std::string(m.name) + "_";
    double sum_alone = 0;
    const size_t first_alone = cpus > 0 ? 1 : 0;
    for (size_t i = 0; i < configs.size(); ++i) {
      const bool together = configs[i].name == "even" || configs[i].name == "weighted";
      if (!together) {
        if (i >= first_alone) sum_alone += median[i];
        run.out->figure({"scaling", prefix + configs[i].name, median[i], "samples/s", std::nullopt, 0});
        continue;
      }
      run.out->figure(
          {"scaling", prefix + configs[i].name, median[i], "samples/s", "sum of the devices alone", sum_alone});
      if (cpus > 0)
        run.out->figure({"scaling", prefix + configs[i].name + "_vs_one_device", median[i], "samples/s",
                         "cpu:0 with every core", median[0]});
    }
  }
}

}  // namespace braid::bench
