"""The analytic side of the coded job (docs/theory.md (B.3)-(B.6)). Pure: no MPI.

Formula modules, used by the schemes: :mod:`.loads` (closed-form loads, the
reference parameters' rules) and :mod:`.delay` (the shifted-exponential delay
model, operation counts).  Above the coded package: :mod:`.bdc_load` (the BDC
load of an assignment matrix and the servers waited for), :mod:`.solvers`
(assignment solvers), :mod:`.model` (predicted load and delay per phase) and
:mod:`.calibration` (the cost table measured here, and every phase in seconds).
"""
