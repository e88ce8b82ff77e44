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

## Run the whole test suite, real-model tests included (scripts/test.sh: the default model is
# fetched and llama.cpp's server, which the llama-server tests need, is built in the background
# while the test profile compiles; the real-model tests then run alone, one at a time).
test: deps
	@CARGO="$(CARGO)" bash scripts/test.sh

## The GPU-offload test on a Vulkan device (Mesa's software one where there is no GPU).
test-gpu: model
	@bash scripts/test-gpu.sh

lint: deps
	$(CARGO) fmt --all -- --check
	$(CARGO) clippy --all-targets -- -D warnings

## Speed and memory figures, measured side by side against baselines.
bench: model
	@bash scripts/fetch-model.sh draft
	$(CARGO) build --release
	@bash scripts/bench.sh

## The evals (evals/README.md): every task, all four arms, one seed, on the default model.
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
