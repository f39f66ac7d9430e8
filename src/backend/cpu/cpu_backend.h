#pragma once

#include <memory>

#include "backend/backend.h"

namespace ox::cpu {
std::unique_ptr<Backend> make_backend();
}
