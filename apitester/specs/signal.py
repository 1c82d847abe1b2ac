"""Signal-processing specs (paddle.signal.*)."""

from __future__ import annotations

import numpy as np

from ..inputs import precondition
from ..references import reference
from .base import Spec, register, torch_call


@precondition("a positive window: near zero it violates the NOLA condition istft divides by")
def window_values(ctx):
    """Window samples in [0.1, 1): a window near zero everywhere violates the NOLA
    condition (the overlap-add envelope istft divides by), which both APIs reject or
    amplify into noise; real windows (hann, hamming, ...) are positive like these."""
    values = ctx.rng.uniform(0.1, 1.0, ctx.shape)
    return values.astype("float32" if ctx.dtype == "bfloat16" else ctx.dtype)


# ---------------------------------------------------------------- independent reference (Spec.ref)

_MP_MAX_FFT = 64  # frames up to this n_fft are inverted by a direct DFT in mpmath, larger ones by NumPy's FFT


def _inverse_dft(spectrum, n_fft, onesided):
    """Each column's inverse DFT of length n_fft (complex), from the one-sided half when ``onesided``."""
    import mpmath

    from ..references import DPS, to_mp

    n_freq = spectrum.shape[0]
    if onesided:
        full = np.zeros((n_fft, spectrum.shape[1]), dtype=np.complex128)
        full[:n_freq] = spectrum
        for k in range(1, n_fft - n_freq + 1):
            full[n_fft - k] = np.conj(spectrum[k])
        spectrum = full
        spectrum[0] = spectrum[0].real
        if n_fft % 2 == 0:
            spectrum[n_fft // 2] = spectrum[n_fft // 2].real
    if n_fft > _MP_MAX_FFT:
        return np.fft.ifft(spectrum, n=n_fft, axis=0)
    out = np.empty((n_fft, spectrum.shape[1]), dtype=np.complex128)
    with mpmath.workdps(DPS):
        roots = [mpmath.expjpi(mpmath.mpf(2 * j) / n_fft) for j in range(n_fft)]
        for col in range(spectrum.shape[1]):
            values = [to_mp(complex(v)) for v in spectrum[:, col].tolist()]
            for n in range(n_fft):
                total = mpmath.fsum(values[k] * roots[(k * n) % n_fft] for k in range(n_fft))
                out[n, col] = complex(total / n_fft)
    return out


@reference("mpmath inverse DFT at 40 digits for n_fft <= 64, NumPy float64 FFT above; overlap-add in float64")
def _ref_istft(x, n_fft, hop_length=None, win_length=None, window=None, center=True, normalized=False,
               onesided=True, length=None, return_complex=False, **_):
    from ..references import covered

    covered(x.dtype.kind == "c" and np.isfinite(x).all(), "a real or non-finite spectrum")
    n_fft = int(n_fft)
    hop = n_fft // 4 if hop_length is None else int(hop_length)
    win_length = n_fft if win_length is None else int(win_length)
    win = np.ones(win_length) if window is None else np.asarray(window, dtype=np.complex128 if
                                                                 np.iscomplexobj(window) else np.float64)
    left = (n_fft - win_length) // 2
    padded = np.zeros(n_fft, dtype=win.dtype)
    padded[left:left + win_length] = win
    batch = x.shape[:-2]
    lanes = x.reshape((-1,) + x.shape[-2:])
    outs = []
    for spec in lanes:
        if normalized:
            spec = spec * np.sqrt(n_fft)
        frames = _inverse_dft(spec, n_fft, onesided)
        if not return_complex:
            frames = frames.real
        frames = frames * padded[:, None]
        n_frames = spec.shape[1]
        total = n_fft + hop * (n_frames - 1)
        signal = np.zeros(total, dtype=frames.dtype)
        envelope = np.zeros(total)
        for t in range(n_frames):
            signal[t * hop:t * hop + n_fft] += frames[:, t]
            envelope[t * hop:t * hop + n_fft] += np.abs(padded) ** 2
        start = n_fft // 2 if center else 0
        end = total - n_fft // 2 if center else total
        if length is not None:
            end = start + int(length)
        signal, envelope = signal[start:end], envelope[start:end]
        covered(bool((envelope[:signal.size] > 1e-11).all()), "the NOLA condition fails")
        out = signal / envelope
        if length is not None and out.size < int(length):
            out = np.concatenate([out, np.zeros(int(length) - out.size, dtype=out.dtype)])
        outs.append(out)
    return np.asarray(outs).reshape(batch + (outs[0].size,))


register(
    Spec(
        api="paddle.signal.istft",
        ref=_ref_istft,
        torch=torch_call("torch.istft", x="input"),
        domains={"window": window_values},
        # Every output sample is an inverse FFT of a whole frame: a 1e150 input puts float64 rounding of
        # ~1e134 into its neighbours, beyond any elementwise tolerance where they are small (seen as a
        # 1.08 relative difference next to a 5e151 value on the report config). Edges 0 and +-1 only.
        magnitudes=False,
        note="torch.istft with the same parameters (x -> input); the window is drawn "
        "positive so the overlap-add envelope is well conditioned.",
    ),
)
