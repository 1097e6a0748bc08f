"""Log line parsing and attribution of child lines to models, on lines copied from a real router log."""

from __future__ import annotations

from app.services.core.router_types import ModelInfo, ModelState
from app.services.logs.parse import LogAttributor, model_lines, parse_lines

REAL = """\
0.00.006.473 I srv  llama_server: starting server in router mode. models will be automatically loaded on-demand
0.00.040.230 I srv          load: spawning server instance with name=alpha on port 39309
[39309] 0.00.003.949 I srv    load_model: loading model '/m/alpha.gguf'
0.00.066.189 I srv          load: spawning server instance with name=beta on port 45311
[45311] 0.00.005.084 E llama_model_load: error loading model: tensor data is not within the file bounds
[39309] 0.00.010.198 I srv  llama_server: model loaded
0.00.143.529 I srv           run: instance name=beta exited with status 1
[50000] 0.00.001.000 I srv  llama_server: initializing ...
plain line without anything"""


def test_fields_and_attribution() -> None:
    lines = parse_lines(REAL.splitlines())
    first = lines[0]
    assert (first.time, first.level, first.source, first.model) == ("0.00.006.473", "I", "router", None)
    assert first.text.startswith("srv  llama_server: starting server")
    err = lines[4]
    assert (err.source, err.port, err.level, err.model) == ("child", 45311, "E", "beta")
    assert lines[6].model == "beta" and lines[6].source == "router"
    assert lines[7].model is None  # a port nobody announced
    assert lines[8].text == "plain line without anything" and lines[8].level == ""


def test_model_filter_shows_only_that_models_lines() -> None:
    lines = parse_lines(REAL.splitlines())
    alpha = model_lines(lines, "alpha")
    assert [ln.port for ln in alpha if ln.source == "child"] == [39309, 39309]
    assert all("beta" not in ln.raw for ln in alpha)


def test_ports_from_status_args() -> None:
    att = LogAttributor()
    att.learn_models([ModelInfo(id="gamma", state=ModelState.LOADED, args=("x", "--port", "4242"))])
    assert att.parse("[4242] 0.00.000.001 W srv  x: y").model == "gamma"
