#pragma once
// Reading and writing tensors in files.

#include "oxmera/io/checkpoint.h"
#include "oxmera/io/log.h"
#include "oxmera/io/pytorch.h"
#include "oxmera/io/safetensors.h"
#include "oxmera/io/serialize.h"
