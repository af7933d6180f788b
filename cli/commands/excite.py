"""``dyn excite``: an excitation trajectory for identification, written as a log
(:mod:`treedyn.engine.excitation`, :mod:`treedyn.pipeline.trajectory`)."""
from typing import Annotated, Optional

import typer

from ..console import show_text
from ..model import load
from ..options import FreeFlyerOpt, ModelArg, SeedOpt, epilog, examples, finite, positive

EXCITE_EXAMPLES = examples(
    "dyn excite fixtures/two_link_arm.urdf -o traj.npz --period 5 --harmonics 3",
    "dyn excite robot.urdf -o traj.csv --acceleration-limit 5 --floor tool0=0.1",
)


@epilog(EXCITE_EXAMPLES)
def excite(
        model: ModelArg,
        output: Annotated[str, typer.Option(
            "--output", "-o", metavar="FILE", show_default=False,
            help="The log to write: .npz (arrays q, v, a, t, dofs), .csv or .jsonl.")],
        period: Annotated[float, typer.Option(
            "--period", metavar="T", callback=positive,
            help="Period of the Fourier series (s): its base frequency is 1/T.")] = 10.0,
        harmonics: Annotated[int, typer.Option(
            "--harmonics", min=1, max=50, help="Harmonics per joint (bandwidth L/T).")] = 5,
        rate: Annotated[float, typer.Option(
            "--rate", metavar="HZ", callback=positive,
            help="States per second in the log.")] = 100.0,
        duration: Annotated[Optional[float], typer.Option(
            "--duration", metavar="S", callback=lambda x: x if x is None else positive(x),
            show_default=False, help="Length of the log (s). Default: one period.")] = None,
        acceleration_limit: Annotated[Optional[float], typer.Option(
            "--acceleration-limit", metavar="A", show_default=False,
            callback=lambda x: x if x is None else positive(x),
            help="|a| bound of every joint (rad/s^2 or m/s^2); URDF has none.")] = None,
        floor: Annotated[Optional[list[str]], typer.Option(
            "--floor", metavar="FRAME=HEIGHT", show_default=False,
            help="Keep this frame's origin at or above HEIGHT (world z, m); repeatable.")
        ] = None,
        torques: Annotated[bool, typer.Option(
            "--torques", help="Also write tau: the model's inverse dynamics along it.")
        ] = False,
        noise: Annotated[float, typer.Option(
            "--noise", metavar="SIGMA", min=0.0, callback=finite,
            help="With --torques: add normal noise of this deviation (N m or N) to tau, "
            "seeded by --seed: a simulated log.")] = 0.0,
        samples: Annotated[int, typer.Option(
            "--samples", min=4, help="States of one period in the objective.")] = 60,
        iterations: Annotated[int, typer.Option(
            "--iterations", min=0, help="Most SLSQP iterations.")] = 100,
        seed: SeedOpt = 0, free_flyer: FreeFlyerOpt = False,
) -> None:
    """An excitation trajectory: a Fourier series per joint, well conditioned for identify.

    q_j(t) = q0_j + sum_l a_jl/(w l) sin(w l t) - b_jl/(w l) cos(w l t), w = 2 pi/T
    (Swevers 1997), for every revolute, continuous and prismatic joint (others still),
    the coefficients chosen by SLSQP from a seeded random start to minimise the condition
    number of the base regressor over one period, within the joints' position and
    velocity limits, --acceleration-limit and every --floor. Prints the condition number
    reached and the random start's. --torques and --noise make it a simulated log.
    """
    from treedyn.pipeline.trajectory import Plan, excitation_log
    loaded = load(model, free_flyer)
    plan = Plan(period, harmonics, rate, duration, acceleration_limit, tuple(floor or ()),
                samples, iterations, seed, torques, noise)
    trajectory, count = excitation_log(loaded, output, plan)
    show_text(f"{output}: {count} states at {rate:g} Hz over {count / rate:g} s, "
              f"{len(trajectory.excitation.dofs)} joints, {harmonics} harmonics of "
              f"{1 / period:g} Hz\ncondition number of the base regressor "
              f"({len(trajectory.excitation.base)} columns): {trajectory.condition:.4g} "
              f"(random start: {trajectory.start_condition:.4g})")
