// `oxmera train`: trains a recipe (cnn, mlp, chargpt, char_lstm) with a progress line or a
// full-screen dashboard, an evaluation and a checkpoint each epoch, a checkpoint on Ctrl-C
// (SIGTERM, SIGHUP, or q in the dashboard), optional JSON-lines and TensorBoard logs, and resumes
// bitwise exactly.
//
// Exactness on resume rests on three things: the model, optimizer, scheduler and default
// generator are restored from the checkpoint; each epoch's shuffle comes from (seed, epoch)
// alone (DataLoader); and the batches of an interrupted epoch that were already trained on are
// skipped, so the run continues at the very batch it stopped before.

#include <oxmera/oxmera.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <charconv>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <limits>
#include <memory>
#include <optional>

#include "checks.h"
#include "commands.h"
#include "pending_steps.h"
#include "precision.h"
#include "progress.h"
#include "recipes.h"
#include "run_settings.h"
#include "train_dashboard.h"

namespace oxcli {

namespace {

// Bounds of the flags: a rate above this only makes NaNs; more threads than this is a typo.
constexpr int kMaxThreads = 1 << 16;
constexpr int64_t kMaxSteps = int64_t(1) << 53;

// The signal that asked the run to stop (0: none). The handler only sets it; the loop checks
// it after each step, where a checkpoint can be written consistently.
std::atomic<int> stop_signal{0};
extern "C" void on_stop_signal(int signal) { stop_signal.store(signal); }

// Installs the handler for SIGINT, SIGTERM and SIGHUP while alive; the previous ones come back
// after.
class StopSignals {
 public:
  StopSignals() {
    stop_signal.store(0);
    struct sigaction action = {};
    action.sa_handler = on_stop_signal;
    action.sa_flags = SA_RESTART;  // system calls in flight (reads, writes) carry on
    sigemptyset(&action.sa_mask);
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &action, &previous_[i]);
  }
  ~StopSignals() {
    for (size_t i = 0; i < kSignals.size(); ++i) sigaction(kSignals[i], &previous_[i], nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;

 private:
  static constexpr std::array<int, 3> kSignals = {SIGINT, SIGTERM, SIGHUP};
  std::array<struct sigaction, 3> previous_ = {};
};

int exit_code_for(int signal) { return 128 + signal; }  // 130 for SIGINT, 143 for SIGTERM

const char* signal_name(int signal) {
  return signal == SIGINT ? "SIGINT" : signal == SIGTERM ? "SIGTERM" : "SIGHUP";
}

// Why a run stops early: a signal, or q in the dashboard.
struct Stop {
  int signal = 0;
  bool quit = false;
  bool nonfinite = false;  // the loss turned NaN or infinite (without --allow-nonfinite)
  explicit operator bool() const { return signal != 0 || quit || nonfinite; }
};

Stop check_stop(TrainView& view) {
  if (view.poll() == Request::kQuit) return {.quit = true};
  return {.signal = stop_signal.load()};
}

// master: f32 master weights for 16-bit parameters (--precision bf16/f16).
std::unique_ptr<ox::optim::Optimizer> make_optimizer(const std::string& name,
                                                     const std::vector<ox::Tensor>& params,
                                                     double lr, bool master) {
  if (name == "adam")
    return std::make_unique<ox::optim::Adam>(
        params, ox::optim::AdamOptions{.lr = lr, .master_weights = master});
  if (name == "adamw")
    return std::make_unique<ox::optim::AdamW>(
        params, ox::optim::AdamWOptions{.lr = lr, .master_weights = master});
  if (name == "sgd")
    return std::make_unique<ox::optim::SGD>(
        params, ox::optim::SGDOptions{.lr = lr, .momentum = 0.9, .master_weights = master});
  OX_FAIL(Value, "oxmera train", "unknown optimizer '", name, "' (adam, adamw, sgd)");
}

// Schedulers step once per batch: cosine and onecycle over the whole run, step halving the
// rate after each epoch.
std::unique_ptr<ox::optim::LRScheduler> make_scheduler(const std::string& name,
                                                       ox::optim::Optimizer& optimizer,
                                                       int64_t total_steps, int64_t steps_per_epoch,
                                                       double lr) {
  if (name == "none") return nullptr;
  if (name == "cosine")
    return std::make_unique<ox::optim::CosineAnnealingLR>(optimizer,
                                                          std::max<int64_t>(total_steps, 1));
  if (name == "step")
    return std::make_unique<ox::optim::StepLR>(optimizer, std::max<int64_t>(steps_per_epoch, 1),
                                               0.5);
  if (name == "onecycle")
    return std::make_unique<ox::optim::OneCycleLR>(
        optimizer, ox::optim::OneCycleLROptions{.max_lr = lr,
                                                .total_steps = std::max<int64_t>(total_steps, 1)});
  OX_FAIL(Value, "oxmera train", "unknown scheduler '", name, "' (none, cosine, step, onecycle)");
}

// The autocast scope of a step (off unless --precision is amp-*).
ox::amp::Autocast autocast_for(const Precision& precision, ox::Device device) {
  return ox::amp::Autocast(device.type(), precision.autocast.value_or(ox::kBF16),
                           precision.autocast.has_value());
}

struct Evaluation {
  double loss = 0, accuracy = 0;
  int64_t examples = 0;
};

// Mean loss and accuracy over `dataset` in eval mode without gradients; nullopt when asked to
// stop in between (`stop` says why).
std::optional<Evaluation> evaluate(const Task& task, const Precision& precision, ox::Device device,
                                   const ox::data::DatasetPtr& dataset, TrainView& view,
                                   Stop& stop) {
  ox::NoGradGuard no_grad;
  task.model->eval();
  ox::data::DataLoader loader(dataset, {.batch_size = 500, .num_workers = 1});
  double loss_sum = 0;
  int64_t correct = 0, count = 0;
  for (ox::data::Example& batch : loader) {
    const ox::Tensor targets = task.targets(batch.target);
    ox::Tensor logits, loss;
    {
      const ox::amp::Autocast autocast = autocast_for(precision, device);
      logits = task.logits(batch.data);
      loss = ox::nn::functional::cross_entropy(logits, targets);
    }
    const int64_t n = targets.size(0);
    loss_sum += loss.item<double>() * double(n);
    correct += ox::eq(ox::argmax(logits, 1), targets).sum().item<int64_t>();
    count += n;
    if ((stop = check_stop(view))) {
      task.model->train();
      return std::nullopt;
    }
  }
  task.model->train();
  if (count == 0) return Evaluation{.loss = NAN, .accuracy = NAN};  // said as such, not 0 %
  return Evaluation{loss_sum / double(count), double(correct) / double(count), count};
}

void print_error(const ox::Error& e) {
  std::fprintf(stderr, "oxmera train: %s error: %s\n", ox::error_kind_name(e.kind()), e.what());
}

// Everything a run holds once its inputs are read and checked.
struct Run {
  TrainConfig config;
  Task task;
  int64_t batch_size = 0;
  double lr = 0;
  std::string optimizer_name;
  std::unique_ptr<ox::optim::Optimizer> optimizer;
  std::unique_ptr<ox::optim::LRScheduler> scheduler;
  Precision precision;
  std::unique_ptr<ox::amp::GradScaler> scaler;  // disabled unless precision.scaled
  std::unique_ptr<ox::data::DataLoader> loader;
  std::unique_ptr<ox::io::JsonlLogger> log;
  std::unique_ptr<ox::io::TensorBoardWriter> tensorboard;
  int64_t step = 0, epoch = 0;
  ox::Device device = ox::Device::cpu();
  ox::nn::parallel::DistributedDataParallel ddp = nullptr;  // with --ddp
  bool leader = true;  // rank 0, or the only process: writes, logs and prints
  // The flags a resumed run took from its checkpoint ("--lr 0.001", ...), for the resume line.
  std::vector<std::string> inherited;

  RunSettings settings() const {
    const std::string& data = is_text_recipe(config.recipe) ? config.text : config.data;
    std::error_code error;
    const std::filesystem::path absolute = std::filesystem::absolute(data, error);
    return {.recipe = config.recipe,
            .optimizer = optimizer_name,
            .scheduler = config.scheduler,
            .data = error ? data : absolute.lexically_normal().string(),
            .epochs = config.epochs,
            .batch_size = batch_size,
            .limit = config.limit,
            .seed = config.seed,
            .lr = lr,
            .data_fingerprint = task.data_fingerprint,
            .precision = precision.name,
            .world_size = ox::distributed::get_world_size()};
  }
  ox::Checkpoint checkpoint() {
    ox::Checkpoint out{.model = task.model,
                       .optimizer = optimizer.get(),
                       .scaler = scaler.get(),
                       .step = step,
                       .epoch = epoch,
                       .extra = task.extra};
    if (scheduler) out.scheduler = scheduler.get();
    store_run_settings(out.extra, settings());
    return out;
  }
  // The command that continues this run: every flag that shapes its batches and schedule.
  std::string resume_command() const {
    const TrainConfig defaults;
    std::string command = "oxmera train --recipe " + config.recipe;
    const auto flag = [&](const char* name, const std::string& value) {
      command += std::string(" ") + name + " " + value;
    };
    if (is_text_recipe(config.recipe) && config.text != defaults.text) flag("--text", config.text);
    if (!config.model.empty()) flag("--model", config.model);
    if (!is_text_recipe(config.recipe) && config.data != defaults.data) flag("--data", config.data);
    flag("--epochs", std::to_string(config.epochs));
    flag("--batch-size", std::to_string(batch_size));
    if (config.lr > 0) {
      char lr_text[32];
      std::snprintf(lr_text, sizeof lr_text, "%.17g", config.lr);
      flag("--lr", lr_text);
    }
    if (!config.optimizer.empty()) flag("--optimizer", config.optimizer);
    if (config.scheduler != defaults.scheduler) flag("--scheduler", config.scheduler);
    if (config.precision != defaults.precision) flag("--precision", config.precision);
    flag("--seed", std::to_string(config.seed));
    if (config.limit > 0) flag("--limit", std::to_string(config.limit));
    if (config.save != "oxmera-" + config.recipe + ".safetensors") flag("--save", config.save);
    flag("--resume", config.save);
    if (ddp) {  // the same number of ranks: each rank's shard depends on it
      const std::string n = std::to_string(ddp->process_group()->size());
      command = (ddp->process_group()->backend() == "mpi" ? "mpirun -n " + n + " "
                                                          : "oxmera launch -n " + n + " -- ") +
                command + " --ddp";
    }
    return command;
  }
};

// The files a run writes are checked before it reads or trains anything: each can be written
// (a folder that exists and takes files; nothing but a regular file is replaced, and of those
// only a checkpoint without --overwrite), and no two of them, nor one of them and an input,
// are the same file.
void check_outputs(const TrainConfig& config) {
  check_output_file(config.save, "--save");
  if (!config.log.empty()) check_output_file(config.log, "--log", /*append=*/true);
  if (!config.tensorboard.empty()) check_output_folder(config.tensorboard, "--tensorboard");
  check_distinct("--save", config.save, "--log", config.log);
  check_distinct("--save", config.save, "--tensorboard", config.tensorboard);
  check_distinct("--log", config.log, "--tensorboard", config.tensorboard);
  check_distinct("--log", config.log, "--resume", config.resume);
  check_distinct("--tensorboard", config.tensorboard, "--resume", config.resume);
  std::vector<std::string> inputs;
  if (is_text_recipe(config.recipe)) {
    inputs.push_back(config.text);
  } else {
    for (const char* set : {"train", "t10k"})
      for (const char* part : {"-images-idx3-ubyte", "-labels-idx1-ubyte"})
        for (const char* suffix : {"", ".gz"})
          inputs.push_back(
              (std::filesystem::path(config.data) / (std::string(set) + part + suffix)).string());
  }
  const char* input_flag = is_text_recipe(config.recipe) ? "--text" : "--data";
  for (const std::string& input : inputs) {
    check_distinct("--save", config.save, input_flag, input);
    check_distinct("--log", config.log, input_flag, input);
    check_distinct("--resume", config.resume, input_flag, input);
  }
  check_checkpoint_destination(config.save, "--save", config.overwrite);
}

// Refuses runs that cannot train as asked: no examples to train or test on, a batch larger
// than the training set (it would be the whole set, silently), more steps than are counted.
void check_sizes(const Run& run, int64_t per_epoch) {
  const int64_t examples = run.task.train->size();
  OX_CHECK(examples > 0, Value, "oxmera train", "no training examples");
  OX_CHECK(run.task.test->size() > 0, Value, "oxmera train", "no test examples (",
           run.task.test_name, " is empty)");
  const bool given = run.config.was_given("--batch-size");
  OX_CHECK(run.batch_size <= examples, Value, "oxmera train", "batch size ", run.batch_size,
           given ? " (--batch-size)" : " (the recipe's default)", " is larger than the ", examples,
           " training examples", run.config.limit > 0 ? " (--limit)" : "", "; give --batch-size ",
           examples, " or less");
  // The schedulers compute in doubles: beyond 2^53 steps they no longer tell steps apart (and
  // beyond 2^63 the count itself wraps around).
  OX_CHECK(run.config.epochs <= kMaxSteps / per_epoch, Value, "oxmera train", "--epochs ",
           run.config.epochs, " of ", per_epoch,
           " batches each is more steps than 2^53, the most a schedule counts exactly");
}

// Reads the data, builds the model, optimizer and scheduler, restores a checkpoint: every
// failure here is the input's (exit 2).
Run prepare(const TrainConfig& given) {
  ox::Device device = ox::Device::parse(given.device);
  if (device.type() == ox::DeviceType::CUDA) {
    OX_CHECK(ox::cuda::is_available(), Device, "oxmera train", "device '", given.device,
             "' is not available: ", ox::cuda::unavailable_reason(), " (use --device cpu)");
    OX_CHECK(device.index() < ox::cuda::device_count(), Device, "oxmera train", "device '",
             given.device, "' does not exist: ", ox::cuda::device_count(),
             " CUDA device(s) present");
  }
  OX_CHECK(!given.tui || (isatty(STDIN_FILENO) && isatty(STDOUT_FILENO)), Value, "oxmera train",
           "--tui needs a terminal for standard input and output");
  Run run;
  run.config = given;
  TrainConfig& config = run.config;
  if (config.ddp) {
    OX_CHECK(!config.tui, Value, "oxmera train", "--tui and --ddp do not go together");
    // CPU replicas reduce over Gloo, or over MPI when mpirun started them (it sets its own
    // variables, not RANK); on CUDA each rank takes the GPU of its LOCAL_RANK (on top of
    // --device's index) and reduces over NCCL.
    const bool under_mpirun =
        !std::getenv("RANK") && (std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") ||
                                 std::getenv("PMIX_RANK"));
    ox::distributed::init_process_group({.backend = device.is_cuda() ? "nccl"
                                                    : under_mpirun   ? "mpi"
                                                                     : "gloo"});
    if (device.is_cuda())
      if (const char* local = std::getenv("LOCAL_RANK"))
        device = ox::Device::cuda((device.index() + std::atoi(local)) % ox::cuda::device_count());
    run.leader = ox::distributed::get_rank() == 0;
    // The other ranks print nothing: rank 0 speaks for the run (errors still reach stderr).
    if (!run.leader && !std::freopen("/dev/null", "w", stdout)) std::perror("oxmera train");
  }
  std::optional<ox::TensorDict> stored_tensors;
  RunSettings stored;
  if (!config.resume.empty()) {
    check_input_file(config.resume, "--resume");
    stored_tensors = ox::load_safetensors(config.resume);
    stored = read_run_settings(*stored_tensors, config.resume);
    settle_resumed_settings(config, stored, run.inherited);
    // Each rank's shard of every epoch depends on the number of ranks.
    const int world = ox::distributed::get_world_size();
    OX_CHECK(stored.world_size == world, Value, "oxmera train", "checkpoint '", config.resume,
             "' was trained by ", stored.world_size, " process", stored.world_size == 1 ? "" : "es",
             stored.world_size == 1 ? " (without --ddp)" : " (--ddp)", " and this run has ", world,
             ": continue it with ",
             stored.world_size == 1 ? std::string("oxmera train, without --ddp")
                                    : "oxmera launch -n " + std::to_string(stored.world_size) +
                                          " -- oxmera train ... --ddp");
  }
  // `--save ''` is refused by check_outputs, not taken for the default.
  if (!config.was_given("--save")) config.save = "oxmera-" + config.recipe + ".safetensors";
  check_outputs(config);
  ox::manual_seed(config.seed);
  run.task = make_task(config);
  run.precision = parse_precision(config.precision);
  apply_precision(run.task, run.precision);
  run.device = device;
  if (!device.is_cpu()) {
    // The data stays on the CPU (loaded, transformed and batched there, in pinned memory); each
    // batch moves to the device as the step takes it, without waiting.
    run.task.model->to(device);
    for (auto* f : {&run.task.logits, &run.task.targets})
      *f = [g = *f, device](const ox::Tensor& x) {
        return g(x.to(device, {.non_blocking = true}));
      };
  }
  run.batch_size = config.batch_size > 0 ? config.batch_size : run.task.batch_size;
  run.lr = config.lr > 0 ? config.lr : run.task.lr;
  run.optimizer_name = config.optimizer.empty() ? run.task.optimizer : config.optimizer;
  // With --ddp each rank batches its shard of the epoch's shuffle (the same on every rank).
  ox::data::SamplerPtr sampler;
  if (config.ddp)
    sampler = std::make_shared<ox::data::DistributedSampler>(
        run.task.train->size(), ox::data::DistributedSamplerOptions{.seed = config.seed});
  run.loader = std::make_unique<ox::data::DataLoader>(
      run.task.train, ox::data::DataLoaderOptions{.batch_size = run.batch_size,
                                                  .shuffle = sampler == nullptr,
                                                  .num_workers = 1,
                                                  .seed = config.seed,
                                                  .pin_memory = !device.is_cpu(),
                                                  .sampler = sampler});
  const int64_t per_epoch = run.loader->size();
  check_sizes(run, per_epoch);
  run.optimizer = make_optimizer(run.optimizer_name, run.task.model->parameters(), run.lr,
                                 run.precision.master_weights);
  run.scaler = std::make_unique<ox::amp::GradScaler>(
      ox::amp::GradScalerOptions{.enabled = run.precision.scaled});
  run.scheduler = make_scheduler(config.scheduler, *run.optimizer, per_epoch * config.epochs,
                                 per_epoch, run.lr);
  if (stored_tensors) {
    check_resumed_data(config, run.task, stored, *stored_tensors);
    stored_tensors.reset();
    ox::Checkpoint checkpoint = run.checkpoint();
    ox::load_checkpoint(config.resume, checkpoint);
    run.step = checkpoint.step;
    run.epoch = checkpoint.epoch;
    OX_CHECK(run.epoch >= 0 && run.epoch <= stored.epochs && run.step >= run.epoch * per_epoch &&
                 run.step <= (run.epoch + 1) * per_epoch,
             Value, "oxmera train", "checkpoint '", config.resume, "' is at step ", run.step,
             " of epoch ", run.epoch, ", which does not fit ", per_epoch, " batches per epoch");
    OX_CHECK(run.epoch <= config.epochs, Value, "oxmera train", "--epochs ", config.epochs,
             " is fewer than the ", run.epoch, " epochs checkpoint '", config.resume,
             "' has finished");
    // An epoch stopped in the middle is finished, not dropped, unless --epochs ends before it.
    OX_CHECK(run.step == run.epoch * per_epoch || run.epoch < config.epochs, Value, "oxmera train",
             "--epochs ", config.epochs, " ends before epoch ", run.epoch + 1,
             ", which checkpoint '", config.resume, "' stopped in the middle of");
  }
  if (config.ddp) {
    // After the resume: rank 0's restored weights are what DDP hands every rank.
    run.ddp = ox::nn::parallel::DistributedDataParallel(run.task.model);
    run.task.logits = [ddp = run.ddp, f = run.task.logits](const ox::Tensor& x) {
      return ddp->call([&] { return f(x); });
    };
  }
  if (!run.leader) return run;
  if (!config.log.empty()) run.log = std::make_unique<ox::io::JsonlLogger>(config.log);
  if (!config.tensorboard.empty())
    run.tensorboard = std::make_unique<ox::io::TensorBoardWriter>(config.tensorboard);
  return run;
}

void flush_logs(Run& run) {
  if (run.log) run.log->flush();
  if (run.tensorboard) run.tensorboard->flush();
}

// With --ddp every rank stops after the same step, when any was asked to (a signal reaches
// the ranks at different moments), so rank 0's checkpoint is where all of them are.
Stop agreed_stop(const Run& run, Stop local) {
  if (!run.ddp) return local;
  const int code_of_local = local.nonfinite ? 2000 : local.quit ? 1000 : local.signal;
  ox::Tensor code = ox::full({}, double(code_of_local), {.dtype = ox::kI32});
  ox::distributed::all_reduce(code, ox::distributed::ReduceOp::Max);
  const int agreed = code.item<int>();
  return agreed == 0      ? Stop{}
         : agreed == 2000 ? Stop{.nonfinite = true}
         : agreed == 1000 ? Stop{.quit = true}
                          : Stop{.signal = agreed};
}

// After a stop in the middle of an epoch: saves where the run is and says how to go on. A
// signal's exit code is 128 + its number; q is a normal end (0).
int stopped(Run& run, TrainView& view, Stop stop) {
  if (run.leader) ox::save_checkpoint(run.config.save, run.checkpoint());
  flush_logs(run);
  view.close();
  std::printf(
      "oxmera train: %s%s at epoch %lld, step %lld; checkpoint saved to %s\n"
      "resume with: %s\n",
      stop.quit ? "quit" : "stopped by ", stop.quit ? "" : signal_name(stop.signal),
      (long long)(run.epoch + 1), (long long)run.step, run.config.save.c_str(),
      run.resume_command().c_str());
  std::fflush(stdout);
  return stop.quit ? 0 : exit_code_for(stop.signal);
}

// After a loss that is not finite: the weights the step left are not worth keeping, so nothing
// is saved and the checkpoint on disk (the last finished epoch's, if any) stays the last good
// state. Exit 3: the run failed, not its input.
int stopped_nonfinite(Run& run, TrainView& view, const StepInfo& bad) {
  flush_logs(run);
  const bool saved = std::filesystem::exists(run.config.save);
  char text[512];
  std::snprintf(text, sizeof text,
                "the loss is %g at epoch %lld, step %lld: training stopped; %s%s; lower --lr (or "
                "give --allow-nonfinite to train on)",
                bad.loss, (long long)(bad.epoch + 1), (long long)bad.step,
                saved ? "the last good checkpoint is " : "no checkpoint was saved",
                saved ? run.config.save.c_str() : "");
  view.failed(text);
  view.close();
  std::fprintf(stderr, "oxmera train: %s\n", text);
  std::fflush(stdout);
  return 3;
}

// After a stop during an evaluation, when the epoch's checkpoint is saved already.
int stopped_evaluating(Run& run, TrainView& view, Stop stop) {
  flush_logs(run);
  view.close();
  std::printf("oxmera train: %s%s during evaluation; the trained model is in %s\n",
              stop.quit ? "quit" : "stopped by ", stop.quit ? "" : signal_name(stop.signal),
              run.config.save.c_str());
  std::fflush(stdout);
  return stop.quit ? 0 : exit_code_for(stop.signal);
}

RunInfo run_info(const Run& run, bool with_summary) {
  const TrainConfig& config = run.config;
  RunInfo info{.recipe = config.recipe,
               .optimizer = run.optimizer_name,
               .scheduler = config.scheduler,
               .precision = run.precision.name,
               .test_name = run.task.test_name,
               .save = config.save,
               .epochs = config.epochs,
               .batches_per_epoch = run.loader->size(),
               .batch_size = run.batch_size,
               .train_examples = run.task.train->size(),
               .first_step = run.step,
               .lr = run.lr,
               .seed = config.seed,
               .threads = ox::get_num_threads()};
  if (with_summary) {
    // One example's shape and dtype, with a batch dimension of 1.
    const ox::Tensor example = run.task.train->get(0).data;
    ox::Shape shape = {1};
    for (int64_t d : example.shape()) shape.push_back(d);
    info.summary = ox::nn::summary(*run.task.model, run.task.logits, shape, example.dtype());
  }
  return info;
}

void log_evaluation(Run& run, const Evaluation& result, double elapsed) {
  if (result.examples == 0) return;
  if (run.log)
    run.log->log_eval({.step = run.step,
                       .epoch = run.epoch,
                       .loss = result.loss,
                       .accuracy = result.accuracy,
                       .elapsed_s = elapsed});
  if (run.tensorboard)
    run.tensorboard->add_scalars({{"accuracy", result.accuracy}, {"eval_loss", result.loss}},
                                 run.step);
}

std::string result_text(const Run& run, const Evaluation& result) {
  if (result.examples == 0) return "no test examples to evaluate on (" + run.task.test_name + ")";
  char text[256];
  const char* unit = run.config.recipe == "lm" ? "token" : "character";
  if (is_text_recipe(run.config.recipe))
    std::snprintf(text, sizeof text, "held-out loss %.4f, next-%s accuracy %.2f%% (%lld %ss of %s)",
                  result.loss, unit, 100 * result.accuracy, (long long)result.examples, unit,
                  run.task.test_name.c_str());
  else
    std::snprintf(text, sizeof text, "test accuracy %.2f%% (loss %.4f) on %s, %lld examples",
                  100 * result.accuracy, result.loss, run.task.test_name.c_str(),
                  (long long)result.examples);
  return text;
}

int train(Run& run) {
  // Tensors this thread makes (the GPT's sampling, checkpoint metadata) go to the run's device.
  const ox::DeviceGuard on_device(run.device);
  const TrainConfig& config = run.config;
  const bool logging = run.log || run.tensorboard;
  const ox::TensorDict named = run.task.model->named_parameters();
  const int64_t per_epoch = run.loader->size();
  const auto started = std::chrono::steady_clock::now();
  const auto elapsed = [&] {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - started).count();
  };
  std::printf(
      "oxmera train: recipe %s, %lld training examples, %lld batches of %lld per epoch, "
      "%s lr %g, scheduler %s, precision %s, seed %llu, %d threads\n",
      config.recipe.c_str(), (long long)run.task.train->size(), (long long)per_epoch,
      (long long)run.batch_size, run.optimizer_name.c_str(), run.lr, config.scheduler.c_str(),
      run.precision.describe().c_str(), (unsigned long long)config.seed, ox::get_num_threads());
  if (!config.resume.empty()) {
    std::string taken;
    for (const std::string& flag : run.inherited) taken += " " + flag;
    std::printf("resuming from %s at epoch %lld, step %lld%s%s\n", config.resume.c_str(),
                (long long)(run.epoch + 1), (long long)run.step,
                taken.empty() ? "" : "; from the checkpoint:", taken.c_str());
    const bool spans_run = config.scheduler == "cosine" || config.scheduler == "onecycle";
    if (run.epoch >= config.epochs)
      std::printf(
          "nothing left to train: the checkpoint has finished all %lld epochs (%s); "
          "evaluating it\n",
          (long long)config.epochs,
          spans_run ? "its schedule ends there" : "give a larger --epochs to train more");
  }
  std::fflush(stdout);

  // The handlers come first: ncurses leaves signals alone that have one.
  StopSignals signals;
  std::unique_ptr<TrainView> view;
  if (config.tui)
    view = std::make_unique<TrainDashboard>(run_info(run, true),
                                            [] { return stop_signal.load() != 0; });
  else
    view = std::make_unique<Progress>(stdout, isatty(STDOUT_FILENO) != 0, run_info(run, false));
  const bool norms = logging || view->wants_gradient_norms();
  // Losses and norms stay on the device until kReadEvery steps have gathered (and at an epoch's
  // end, or a stop): then one copy brings them to the host, and each step goes to the view and the
  // logs in order, so that a step on a GPU never waits for it. The count, not a clock, decides,
  // so that --ddp ranks read (and agree on a non-finite loss) after the same steps.
  constexpr size_t kReadEvery = 16;
  PendingSteps pending;
  StepInfo last;                   // the last step read
  std::optional<StepInfo> bad;     // the first whose loss was not finite
  const auto read_pending = [&] {  // true when every loss read was finite
    pending.read([&](StepInfo& info) {
      view->step(info);
      if (run.log)
        run.log->log_step({.step = info.step,
                           .epoch = info.epoch,
                           .loss = info.loss,
                           .lr = info.lr,
                           .grad_norm = info.grad_norm,
                           .samples_per_s = view->samples_per_s(),
                           .elapsed_s = elapsed()});
      if (run.tensorboard)
        run.tensorboard->add_scalars(
            {{"loss", info.loss}, {"lr", info.lr}, {"grad_norm", info.grad_norm}}, info.step);
      if (!bad && !std::isfinite(info.loss) && !config.allow_nonfinite) bad = info;
      last = std::move(info);
    });
    return !bad;
  };
  std::optional<Evaluation> result;
  run.task.model->train();
  for (; run.epoch < config.epochs; ++run.epoch) {
    int64_t skip = run.step - run.epoch * per_epoch;
    view->start_epoch(run.epoch, skip);
    run.loader->set_epoch(run.epoch);
    for (ox::data::Example& batch : *run.loader) {
      if (skip > 0) {
        --skip;
        continue;
      }
      run.optimizer->zero_grad();
      ox::Tensor loss;
      {
        const ox::amp::Autocast autocast = autocast_for(run.precision, run.device);
        loss = ox::nn::functional::cross_entropy(run.task.logits(batch.data),
                                                 run.task.targets(batch.target));
      }
      run.scaler->scale(loss).backward();
      run.scaler->unscale_(*run.optimizer);  // the norms below, and the step, see true gradients
      pending.add({.step = run.step + 1,
                   .epoch = run.epoch,
                   .samples = batch.data.size(0),
                   .lr = run.optimizer->get_lr(0)},
                  loss, norms ? &named : nullptr);
      run.scaler->step(*run.optimizer);  // skipped when a scaled gradient overflowed
      run.scaler->update();
      if (run.scheduler) run.scheduler->step();
      ++run.step;
      const bool read = pending.size() >= kReadEvery;
      Stop local = check_stop(*view);
      if (read) local.nonfinite = !read_pending();
      Stop stop = agreed_stop(run, local);
      if (stop && !read) {  // every rank agreed to stop here: read what is left, agree again
        local.nonfinite = !read_pending();
        stop = agreed_stop(run, local);
      }
      if (stop)
        return stop.nonfinite ? stopped_nonfinite(run, *view, bad.value_or(last))
                              : stopped(run, *view, stop);
    }
    if (const Stop stop = agreed_stop(run, {.nonfinite = !read_pending()}))
      return stopped_nonfinite(run, *view, bad.value_or(last));
    view->end_epoch();
    // Each finished epoch is a checkpoint too: a crash loses at most one epoch.
    const int64_t finished = run.epoch;
    ++run.epoch;
    if (run.leader) ox::save_checkpoint(config.save, run.checkpoint());
    run.epoch = finished;
    view->evaluating();
    Stop stop;
    result = evaluate(run.task, run.precision, run.device, run.task.test, *view, stop);
    if (!result) return stopped_evaluating(run, *view, stop);
    log_evaluation(run, *result, elapsed());
    view->evaluated(
        {.step = run.step, .epoch = run.epoch, .loss = result->loss, .accuracy = result->accuracy});
  }
  if (!result) {  // a resumed run with no epoch left to train
    Stop stop;
    result = evaluate(run.task, run.precision, run.device, run.task.test, *view, stop);
    if (!result) return stopped_evaluating(run, *view, stop);
    log_evaluation(run, *result, elapsed());
  }
  flush_logs(run);
  // Again, for a run resumed with nothing left to train (evaluation and sampling change no
  // state a checkpoint holds, so this is the last epoch's checkpoint otherwise).
  if (run.leader) ox::save_checkpoint(config.save, run.checkpoint());
  view->finished(result_text(run, *result) + "; checkpoint saved to " + config.save);
  view->close();
  std::printf("%s\n", result_text(run, *result).c_str());
  if (run.task.sample) std::printf("sample:\n%s\n", run.task.sample(config.seed).c_str());
  if (run.leader && run.task.finish) std::printf("%s\n", run.task.finish().c_str());
  std::printf("checkpoint saved to %s\n", config.save.c_str());
  std::fflush(stdout);
  return 0;
}

}  // namespace

Runner add_train(CLI::App& app) {
  CLI::App* cmd = app.add_subcommand(
      "train",
      "train a model (cnn, mlp on Fashion-MNIST; chargpt, char_lstm on text; lm: fine-tune a "
      "Hugging Face causal model on text)");
  auto config = std::make_shared<TrainConfig>();
  cmd->add_option("--recipe", config->recipe, "what to train")
      ->check(CLI::IsMember(recipe_names()))
      ->capture_default_str();
  cmd->add_option("--data", config->data, "MNIST-layout IDX files (cnn, mlp)")
      ->capture_default_str();
  cmd->add_option("--text", config->text, "a UTF-8 text file (chargpt, char_lstm, lm)")
      ->capture_default_str();
  cmd->add_option("--model", config->model, "a Hugging Face causal model folder (lm)");
  cmd->add_option("--save-pretrained", config->save_pretrained,
                  "lm: write the trained model there as a Hugging Face folder");
  constexpr int64_t kMax = std::numeric_limits<int64_t>::max();
  add_integer_option(cmd, "--epochs", config->epochs, 1, kMax,
                     "epochs in all (a resumed run counts the done ones)");
  add_integer_option(cmd, "--batch-size", config->batch_size, 1, kMax,
                     "examples per step (default: the recipe's)");
  add_real_option(cmd, "--lr", config->lr, 0, kMaxLearningRate,
                  "learning rate (default: the recipe's)");
  cmd->add_option("--optimizer", config->optimizer, "adam, adamw or sgd (default: the recipe's)")
      ->check(CLI::IsMember({"adam", "adamw", "sgd"}));
  cmd->add_option("--scheduler", config->scheduler, "learning-rate schedule, stepped per batch")
      ->check(CLI::IsMember({"none", "cosine", "step", "onecycle"}))
      ->capture_default_str();
  cmd->add_option("--precision", config->precision,
                  "f32; bf16 or f16 (16-bit weights, f32 master weights); amp-bf16 or amp-f16 "
                  "(f32 weights, autocast)")
      ->check(CLI::IsMember(precision_names()))
      ->capture_default_str();
  add_integer_option(cmd, "--seed", config->seed, uint64_t(0), std::numeric_limits<uint64_t>::max(),
                     "fixes initialization, shuffling and dropout");
  add_integer_option(cmd, "--threads", config->threads, 0, kMaxThreads,
                     "threads (default: all cores; more than the hardware has are capped)");
  // Parsed (and refused, exit 2) by prepare(), with the other input checks.
  cmd->add_option("--device", config->device, "cpu, cuda or cuda:N")->capture_default_str();
  add_integer_option(cmd, "--limit", config->limit, 0, kMax,
                     "train on the first N examples only (0: all)");
  add_integer_option(cmd, "--eval-limit", config->eval_limit, 0, kMax,
                     "evaluate on the first N test examples only (0: all)");
  cmd->add_option("--save", config->save, "checkpoint file (default: oxmera-RECIPE.safetensors)");
  cmd->add_flag("--overwrite", config->overwrite,
                "let --save replace an existing file that is not a safetensors checkpoint");
  cmd->add_flag("--allow-nonfinite", config->allow_nonfinite,
                "train on when the loss turns NaN or infinite (default: stop, exit 3)");
  cmd->add_option("--resume", config->resume, "continue the run a checkpoint holds");
  cmd->add_option("--log", config->log, "JSON-lines log: one record per step and evaluation");
  cmd->add_option("--tensorboard", config->tensorboard, "TensorBoard event folder");
  cmd->add_flag("--tui", config->tui, "a full-screen dashboard (q quit, p pause, tab panels)");
  cmd->add_flag("--ddp", config->ddp,
                "one rank of a data-parallel run: start the ranks with oxmera launch -n N (or "
                "set RANK, WORLD_SIZE, MASTER_ADDR, MASTER_PORT), or mpirun -n N; gloo on the "
                "CPU (mpi under mpirun), nccl with --device cuda (a GPU a rank, by LOCAL_RANK)");
  return [config, cmd]() -> int {
    for (const CLI::Option* option : cmd->get_options())
      if (option->count() > 0) config->given.insert(option->get_name());
    const int threads = threads_to_use(config->threads, "oxmera train");
    if (threads > 0) ox::set_num_threads(threads);
    std::optional<Run> run;
    try {
      run.emplace(prepare(*config));
    } catch (const ox::Error& e) {
      print_error(e);
      return e.kind() == ox::ErrorKind::Internal || e.kind() == ox::ErrorKind::OutOfMemory ? 1 : 2;
    } catch (const std::filesystem::filesystem_error& e) {
      std::fprintf(stderr, "oxmera train: Io error: %s\n", e.what());
      return 2;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr,
                   "oxmera train: OutOfMemory error: not enough memory to set up the run\n");
      return 1;
    }
    try {
      return train(*run);
    } catch (const ox::Error& e) {
      print_error(e);
      return 1;
    } catch (const std::bad_alloc&) {
      std::fprintf(stderr, "oxmera train: OutOfMemory error: not enough memory to train\n");
      return 1;
    } catch (const std::exception& e) {
      std::fprintf(stderr, "oxmera train: %s\n", e.what());
      return 1;
    }
  };
}

}  // namespace oxcli
