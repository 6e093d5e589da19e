"""The optimizer settings braid's Trainer and KVStore take (braid_optimizer_params), from MXNet's name
and parameter names."""
import ctypes

from ._lib import OptimizerParams

_KINDS = {"sgd": 0, "adam": 1}
_KNOWN = {"learning_rate", "momentum", "wd", "beta1", "beta2", "epsilon", "rescale_grad"}


def optimizer_params(name, settings):
    """"sgd" (learning_rate 0.01, momentum, wd, rescale_grad) or "adam" (learning_rate 0.001, beta1, beta2,
    epsilon, wd, rescale_grad) as a braid_optimizer_params; unknown names are a ValueError."""
    if not isinstance(name, str) or name.lower() not in _KINDS:
        raise ValueError(f"braid: optimizer {name!r} is none of 'sgd', 'adam'")
    unknown = set(settings) - _KNOWN
    if unknown:
        raise ValueError(f"braid: optimizer parameters {sorted(unknown)} are not among {sorted(_KNOWN)}")
    adam = name.lower() == "adam"
    return OptimizerParams(ctypes.sizeof(OptimizerParams), _KINDS[name.lower()],
                           float(settings.get("learning_rate", 0.001 if adam else 0.01)),
                           float(settings.get("momentum", 0.0)), float(settings.get("wd", 0.0)),
                           float(settings.get("beta1", 0.9)), float(settings.get("beta2", 0.999)),
                           float(settings.get("epsilon", 1e-8)), float(settings.get("rescale_grad", 1.0)))
