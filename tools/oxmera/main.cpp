// oxmera: what this machine can do (doctor), what a weights file holds (inspect),
// PyTorch checkpoints to safetensors (convert), how fast it
// runs the workloads (bench), training with a live view (train), comparing runs (dashboard) and
// starting the ranks of a data-parallel run (launch).

#include "app.h"

int main(int argc, char** argv) { return oxcli::run_command(argc, argv); }
