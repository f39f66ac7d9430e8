#pragma once
// ox::nn: modules, containers, layers, initializers and the functional forms.

#include "oxmera/nn/activation.h"
#include "oxmera/nn/clip_grad.h"
#include "oxmera/nn/attention.h"
#include "oxmera/nn/containers.h"
#include "oxmera/nn/conv.h"
#include "oxmera/nn/dropout.h"
#include "oxmera/nn/embedding.h"
#include "oxmera/nn/functional.h"
#include "oxmera/nn/init.h"
#include "oxmera/nn/linear.h"
#include "oxmera/nn/loss.h"
#include "oxmera/nn/module.h"
#include "oxmera/nn/normalization.h"
#include "oxmera/nn/pooling.h"
#include "oxmera/nn/rnn.h"
#include "oxmera/nn/transformer.h"
