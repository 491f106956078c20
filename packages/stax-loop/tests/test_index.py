from stax.loop import Affine, linear_index


def test_affine_algebra():
    x0, x1 = Affine.var("x0"), Affine.var("x1")
    e = x0 * 128 + x1 + 3
    assert str(e) == "128*x0 + x1 + 3"
    assert (e + x0 * -128).terms == (("x1", 1),)
    assert e.substitute({"x0": 2}).const == 259
    assert e.bounds({"x0": 64, "x1": 128}) == (3, 63 * 128 + 127 + 3)
    assert str(x0 * -2 + 5) == "-2*x0 + 5"
    assert str(Affine()) == "0"
    assert str(x0 * -3 + x1 * -1) == "-3*x0 - x1"
    assert str(x0 * -1 + (-4)) == "-x0 - 4"


def test_json_round_trip_and_linear_index():
    e = linear_index((Affine.var("x0"), Affine.var("r0"), 0), (1, 64, 999))
    assert str(e) == "64*r0 + x0"
    assert Affine.from_json(e.to_json()) == e
