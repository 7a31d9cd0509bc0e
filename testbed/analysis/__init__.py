"""Analysis over the store: pandas frames, rates with confidence intervals, report tables and figures.

Its rooms, by concern:

- this package's own modules: the frames every room reads (`frames`), rates and intervals (`stats`), conversation
  graphs and role drift (`graphs`, `drift`), information gathering (`info_metrics`), perturbation effects
  (`perturbation`) and how a framework presented the conversation (`wire_shape`);
- `reports`: the run report of each kind and the framework comparison, as frames and as rendered tables;
- `realism`: simulated users' turns against real users' turns on the same contexts;
- `judge_quality`: agreement between annotators, corrected rates, labelled sets, training the learned judge;
- `figures`: the numbers and drawings of `testbed plot` and `testbed graph`;
- `tau2`: the τ² kind's own room: its task metrics, report, simulated-user faults and the views (testbed.specs.kind_views)
  through which report, compare, replay and the run loop reach them without naming the kind.
"""
