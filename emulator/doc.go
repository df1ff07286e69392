// Package emulator serves the wire protocols of AWS SageMaker, Azure ML,
// Google Vertex AI (REST and gRPC), Alibaba PAI-EAS and OpenAI-compatible
// servers from one local process, with a seeded latency and fault model per
// endpoint and per-request ground truth.
package emulator
