# ralph-tui — the two commands a newcomer needs are `make run` and `make test`.
# Everything builds in Cargo's dev profile (llama.cpp itself is built in Release, see
# .cargo/config.toml), so tests, `make run` and lint share one warm target/ directory.

CARGO ?= cargo
export CARGO_TERM_COLOR ?= never

.PHONY: run test test-gpu lint bench eval campaign model deps build bundle

deps:
	@bash scripts/install-deps.sh

model: deps
	@bash scripts/fetch-model.sh

build: deps
	$(CARGO) build

## Build, fetch the default model and start ralph-tui on a demo repository.
run: model build
	@bash scripts/demo.sh

## Run the whole test suite, real-model tests included.
# The real-model tests run on their own afterwards: llama.cpp's worker threads stall when
# other CPU-heavy tests share the cores with them. The llama-server tests need llama.cpp's
# server, built once under target/ (scripts/build-llama-server.sh; skipped when it is there).
test: model
	$(CARGO) test --lib --bins --tests --no-fail-fast -- --skip suite::llama:: --skip suite::llama_server::
	$(CARGO) test --test all --no-fail-fast suite::llama:: -- --test-threads=1
	@bash scripts/build-llama-server.sh >/dev/null
	$(CARGO) test --test all --no-fail-fast suite::llama_server:: -- --test-threads=1

## The GPU-offload test on a Vulkan device (Mesa's software one where there is no GPU).
test-gpu: model
	@bash scripts/test-gpu.sh

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

## Speed and memory figures, measured side by side against baselines.
bench: model
	$(CARGO) build --release
	@bash scripts/bench.sh

## The evals (evals/README.md): every task, all three arms, one seed, on the default model.
eval: model
	$(CARGO) build --bins
	$(CARGO) run --quiet --bin ralph-eval -- $(EVAL_ARGS)

## The adversarial campaign (scripts/campaign.py): hostile scripted workers, random-point
## cancels, kill -9s and known escapes against the real binary, printed as figures.
campaign: deps
	$(CARGO) build --bins
	python3 scripts/campaign.py $(CAMPAIGN_ARGS)

## Release binary + assets + README + LICENSE in dist/ralph-tui-<version>.tar.gz
bundle: deps
	$(CARGO) build --release
	@bash scripts/bundle.sh
