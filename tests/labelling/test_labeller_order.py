"""The question view's order (labelling/labeller_order.py): a permutation of its own for each
labeller and question, the same at every call, untouched by a passage coming or going."""

from labelling.labeller_order import labeller_order

IDS = list(range(101, 131))


def ordered(ids=IDS, *, labeller=7, pool=3, question=11):
    return labeller_order(
        ids, key=lambda pk: pk, labeller_id=labeller, pool_id=pool, question_id=question
    )


def test_it_is_a_permutation_and_the_same_at_every_call():
    first = ordered()
    assert sorted(first) == IDS and first != IDS
    assert ordered() == first
    assert ordered(list(reversed(IDS))) == first  # whatever order the ids come in


def test_labellers_pools_and_questions_each_get_their_own_order():
    mine = ordered()
    others = [ordered(labeller=8), ordered(pool=4), ordered(question=12), ordered(labeller=711)]
    assert all(other != mine for other in others)
    # "7:3:11" must not read as labeller 71, pool 3, question 11 or the like.
    assert ordered(labeller=71, pool=3, question=1) != ordered(labeller=7, pool=31, question=1)


def test_a_passage_coming_or_going_leaves_the_others_in_their_order():
    mine = ordered()
    without = ordered([pk for pk in IDS if pk != mine[4]])
    assert without == [pk for pk in mine if pk != mine[4]]
    extended = ordered([*IDS, 999])
    assert [pk for pk in extended if pk != 999] == mine


def test_items_are_ordered_by_their_key():
    rows = [{"id": pk} for pk in IDS]
    assert [
        row["id"]
        for row in labeller_order(
            rows, key=lambda row: row["id"], labeller_id=7, pool_id=3, question_id=11
        )
    ] == ordered()
