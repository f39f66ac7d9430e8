#pragma once
// Optimizers, learning-rate schedulers (ox::optim) and gradient clipping (ox::nn::utils).

#include "oxmera/nn/clip_grad.h"
#include "oxmera/optim/adagrad.h"
#include "oxmera/optim/adam.h"
#include "oxmera/optim/adamax.h"
#include "oxmera/optim/lion.h"
#include "oxmera/optim/nadam.h"
#include "oxmera/optim/optimizer.h"
#include "oxmera/optim/radam.h"
#include "oxmera/optim/rmsprop.h"
#include "oxmera/optim/scheduler.h"
#include "oxmera/optim/sgd.h"
