// Exception-to-status translation at a plugin's C entry points: nothing may unwind through the ABI.
// One copy for every plugin (and for semaphore_api.h).
#pragma once
#include <new>
#include <system_error>

#include "braid_backend.h"

namespace braid::plugin {

template <typename F>
braid_status guarded(F&& f) noexcept {
  try {
    return f();
  } catch (const std::bad_alloc&) {
    return BRAID_ERR_OUT_OF_MEMORY;
  } catch (const std::system_error& e) {
    // std::thread reports a thread it could not start this way.
    return e.code() == std::errc::resource_unavailable_try_again ? BRAID_ERR_OUT_OF_MEMORY : BRAID_ERR_INTERNAL;
  } catch (...) {
    return BRAID_ERR_INTERNAL;
  }
}

}  // namespace braid::plugin
