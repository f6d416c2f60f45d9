"""How hard the property tests look: hypothesis profiles, and the settings a property test states.

A property test states the examples it tries in an ordinary run with `property_settings(n)`; the
hypothesis profile loaded for the run scales that number:

- `burnbox`, loaded unless another is asked for: hypothesis's defaults (100 examples for a test
  that states none, `n` for one that does) without the per-example deadline: a shared machine
  has slow moments, and a test that fails when an example runs slowly under load is a flaky
  test. A test that asks for `derandomize=True` (the slow ones, over real sockets) tries the
  same inputs on every run, the others fresh random ones.
- `thorough`: ten times as many examples for every property test, with a fresh random seed for
  each run even where the default run derandomises, so a run explores inputs no earlier run
  tried; hypothesis prints the blob that reproduces a failure. For a one-off hunt (some
  minutes on two cores), not for every run. Chosen with `HYPOTHESIS_PROFILE=thorough` in the
  environment (`make test HYPOTHESIS_PROFILE=thorough`) or `--hypothesis-profile=thorough`.
"""

from __future__ import annotations

import os
from typing import Any

import hypothesis

DEFAULT = "burnbox"
THOROUGH = "thorough"
# hypothesis's own default number of examples, against which a profile's number is a scale.
_DEFAULT_EXAMPLES = 100
_THOROUGH_SCALE = 10

hypothesis.settings.register_profile(DEFAULT, deadline=None)
hypothesis.settings.register_profile(
    THOROUGH, parent=hypothesis.settings.get_profile(DEFAULT),
    max_examples=_DEFAULT_EXAMPLES * _THOROUGH_SCALE, derandomize=False, print_blob=True)


def load_profile() -> None:
    """Load the profile named by HYPOTHESIS_PROFILE, `burnbox` when unset
    (`--hypothesis-profile`, applied later by hypothesis's pytest plugin, still wins)."""
    hypothesis.settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE") or DEFAULT)


def property_settings(examples: int, *, derandomize: bool = False,
                      **options: Any) -> hypothesis.settings:
    """The settings of a property test that tries `examples` examples in a default run: that
    number scaled by the loaded profile's `max_examples` over hypothesis's default of 100, and
    `derandomize` honoured except under the thorough profile; `options` are any other
    hypothesis settings (`suppress_health_check`, ...). The rest comes from the loaded profile,
    as it stands when the test module is imported (after the profile is loaded)."""
    current = hypothesis.settings.default
    scaled = max(1, examples * current.max_examples // _DEFAULT_EXAMPLES)
    thorough = hypothesis.settings.get_current_profile_name() == THOROUGH
    return hypothesis.settings(max_examples=scaled, derandomize=derandomize and not thorough,
                               **options)
