"""Number formats and quantization (Part III): format specs checked against ml_dtypes, quantizers,
scale choice (max, percentile, MSE, OCTAV), granularity (per tensor, channel, vector, MX, NVFP4) and
logarithmic arithmetic."""
