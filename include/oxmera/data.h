#pragma once
// Data loading: datasets, transforms, the DataLoader, and readers (IDX/MNIST, text).

#include "oxmera/data/dataloader.h"
#include "oxmera/data/dataset.h"
#include "oxmera/data/mnist.h"
#include "oxmera/data/sampler.h"
#include "oxmera/data/text.h"
#include "oxmera/data/transforms.h"
