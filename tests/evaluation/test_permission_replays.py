"""Permission replays in the app, through the real queue in CI: the team's live system (a server
this suite starts) leaking one restricted document to one test user is caught exactly, a
correct one passes, built-in retrievers pass, uploaded per-user runs are checked, the page
names a leaked document only to those who may see it, and the CLI agrees on the exported bundle.
HTTP evaluation runs are stored like built-in ones."""

import json

import pytest
from django.core.files.uploadedfile import SimpleUploadedFile
from django.core.management import call_command
from django.urls import reverse

from corpus.models import AccessGroup, Document
from corpus.services import documents, retrieval, test_users
from evaluation.models import EvaluationRun, PermissionReplay
from evaluation.services import evaluation_runs, permission_replays
from evaluation.services.gold_sets import finalise_gold_set
from goldeval.cli import main as evaluation_cli
from labelling.services.questions import plant_canaries
from tests.conftest import wait_for_job
from tests.factories import (
    POLICY_TEXT,
    SALARY_TEXT,
    VPN_TEXT,
    MembershipFactory,
    UserFactory,
    labelled_question_set,
    login,
)
from tests.search_server import IndexedDocument, SearchServer

GROUP = "hr-confidential"


@pytest.fixture
def world(worker, project, settings):
    settings.GOLDSET_HTTP_ALLOWED_HOSTS = ["127.0.0.1"]
    people = {n: UserFactory(username=n) for n in ("ann", "bob", "lea", "ada", "out")}
    for name, role in (
        ("ann", "labeller"),
        ("bob", "labeller"),
        ("lea", "lead"),
        ("ada", "admin"),
        ("out", "lead"),
    ):
        MembershipFactory(project=project, user=people[name], role=role)
    question_set = labelled_question_set(
        project, ann=people["ann"], bob=people["bob"], lead=people["lea"], restricted=True
    )
    group = AccessGroup.objects.get(project=project, name=GROUP)
    group.members.add(people["lea"], people["ada"])
    canaries = plant_canaries(project=project, group=GROUP, count=2, set_name="canaries")
    gold_set = finalise_gold_set(question_set=question_set, user=people["ada"])
    test_users.save_test_user(
        project=project, name="alice", groups=[GROUP], headers={"X-Test-User": "alice"}
    )
    test_users.save_test_user(
        project=project, name="bob", no_groups=True, headers={"X-Test-User": "bob"}
    )
    return {"people": people, "gold_set": gold_set, "canaries": canaries, "project": project}


def team_index(world, **behaviour):
    """The team's own index: the corpus (the salary text gained a sentence q1 matches) and the
    canaries, which the team ingested with their group."""
    docs = [
        IndexedDocument("leave", POLICY_TEXT),
        IndexedDocument("vpn", VPN_TEXT),
        IndexedDocument("salaries", SALARY_TEXT + " Unused days carry over.", frozenset({GROUP})),
    ]
    docs += [IndexedDocument(c.doc_id, c.text, frozenset({GROUP})) for c in world["canaries"]]
    return SearchServer(
        documents=docs, users={"alice": frozenset({GROUP}), "bob": frozenset()}, **behaviour
    ).start()


def http_retriever(project, server, name="ours"):
    return retrieval.add_retriever(
        project=project,
        name=name,
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/policies/_search"},
    )


def replay(world, retriever, **kwargs):
    profiles = list(world["project"].test_users.order_by("name"))
    started = permission_replays.start_permission_replay(
        gold_set=world["gold_set"],
        test_users=profiles,
        k=5,
        retriever=retriever,
        user=world["people"]["lea"],
        **kwargs,
    )
    job = wait_for_job(started.job, timeout=120)
    started.refresh_from_db()
    return started, job


def test_a_system_leaking_one_document_to_one_user_is_caught_exactly(world):
    server = team_index(world, leaks={"bob": {"salaries"}})
    try:
        done, job = replay(world, http_retriever(world["project"], server))
    finally:
        server.stop()
    assert job.state == "succeeded", (job.message, job.errors)
    report = done.report
    assert [
        (f["question_id"], f["user"], f["doc_id"], f["groups"]) for f in report["findings"]
    ] == [("q1", "bob", "salaries", [GROUP])]
    assert job.message == "1 leak found (for bob)."
    users = {u["name"]: u for u in report["users"]}
    assert users["bob"]["leaked_results"] == 1 and users["bob"]["first_leaked_rank"] >= 1
    assert users["alice"]["leaked_results"] == 0 and users["unrestricted"]["leaked_results"] == 0
    # The canary questions were asked too: alice and the reference found the canaries.
    assert users["bob"]["questions"] == 5  # three gold questions, two canaries
    assert users["bob"]["canary_leaks"] == 0
    # Every test user's run is stored, and what was sent carried their identity.
    assert sorted(done.runs.values_list("user_name", flat=True)) == ["alice", "bob", "unrestricted"]
    assert {r.headers.get("X-Test-User") for r in server.requests} == {"alice", "bob", None}
    assert done.snapshot["documents"]["salaries"] == {"groups": [GROUP], "canary": False}


def test_a_correct_system_passes_and_built_in_retrievers_pass(world):
    server = team_index(world)
    try:
        done, job = replay(world, http_retriever(world["project"], server))
    finally:
        server.stop()
    assert job.state == "succeeded" and done.report["leaks"] == 0, job.errors
    assert job.message.startswith("No leak")
    cases = done.report["side_channels"]
    assert cases and not any(c["post_filter"] for c in cases)

    scheme = documents.add_chunking_scheme(
        project=world["project"], name="whole", strategy="document"
    )
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(
        project=world["project"], name="bm25", kind="bm25", scheme=scheme
    )
    retrieval.build_index(retriever=bm25)
    done, job = replay(world, bm25)
    assert job.state == "succeeded" and done.report["leaks"] == 0
    users = {u["name"]: u for u in done.report["users"]}
    # Filtering before the top k: bob still gets results, never a restricted one; the canaries
    # reach those who may see them.
    assert users["bob"]["results"] > 0
    canary = world["canaries"][0].doc_id

    def found_by(name):
        lines = bytes(done.runs.get(user_name=name).content).decode().splitlines()
        return {r["doc_id"] for line in lines for r in json.loads(line)["results"]}

    assert canary in found_by("alice") and canary in found_by("unrestricted")
    assert canary not in found_by("bob") and "salaries" not in found_by("bob")


def test_an_endpoint_that_fails_fails_the_replay_with_every_question_listed(world):
    server = team_index(world)
    retriever = retrieval.add_retriever(
        project=world["project"],
        name="broken",
        kind="http",
        endpoint={"preset": "elasticsearch", "url": f"{server.url}/notjson"},
    )
    try:
        done, job = replay(world, retriever)
    finally:
        server.stop()
    assert job.state == "failed" and "no report was stored" in job.message
    assert len(job.errors) == 15  # 5 questions x (alice, bob, unrestricted)
    assert done.report == {} and not done.runs.exists()


def test_uploaded_runs_are_checked_and_the_page_names_a_document_only_to_insiders(world):
    lea, out = login(world["people"]["lea"]), login(world["people"]["out"])
    slug = world["project"].slug
    alice, bob = (world["project"].test_users.get(name=n) for n in ("alice", "bob"))
    runs = {
        alice.pk: '{"question_id": "q1", "results": [{"doc_id": "salaries"}]}\n',
        bob.pk: '{"question_id": "q1", "results": [{"doc_id": "leave"}, {"doc_id": "salaries"}]}\n',
    }
    form = {
        "gold_set": world["gold_set"].pk,
        "test_users": [alice.pk, bob.pk],
        "k": 5,
        "with_canaries": "on",
    }
    start = reverse("evaluation:start-permission-replay", args=[slug])
    # A bad file refuses the replay whole, with the line.
    bad = {f"run_{bob.pk}": SimpleUploadedFile("bob.jsonl", b'{"question_id": 1, "results": 5}')}
    good_alice = {f"run_{alice.pk}": SimpleUploadedFile("alice.jsonl", runs[alice.pk].encode())}
    response = lea.post(start, {**form, **good_alice, **bad})
    assert response.status_code == 400 and "bob.jsonl (bob): line 1" in response.content.decode()
    assert not PermissionReplay.objects.exists()
    # A run missing for a chosen user is refused too.
    alice_file = SimpleUploadedFile("alice.jsonl", runs[alice.pk].encode())
    response = lea.post(start, {**form, f"run_{alice.pk}": alice_file})
    assert response.status_code == 400 and "(missing: bob)" in response.content.decode()

    files = {
        f"run_{pk}": SimpleUploadedFile(f"{pk}.jsonl", text.encode()) for pk, text in runs.items()
    }
    response = lea.post(start, {**form, **files})
    done = PermissionReplay.objects.get()
    assert response.status_code == 302
    wait_for_job(done.job)
    done.refresh_from_db()
    assert [(f["user"], f["doc_id"], f["rank"]) for f in done.report["findings"]] == [
        ("bob", "salaries", 2)
    ]
    page = reverse("evaluation:show-permission-replay", args=[slug, done.pk])
    insider = lea.get(page).content.decode()
    assert "1 leak" in insider and "salaries" in insider and GROUP in insider
    # A lead outside the group sees that bob leaked, never which document or its group.
    outsider = out.get(page)
    text = outsider.content.decode()
    assert outsider.status_code == 200 and "1 leak" in text
    assert "a document hidden from you" in text
    findings = text[text.index('<table class="findings">') :]
    findings = findings[: findings.index("</table>")]
    assert "a document hidden from you" in findings and "bob" in findings
    # (The test users' own groups stay on the page: they are the test's setup, not a document.)
    assert "salaries" not in text and "Band C" not in text and GROUP not in findings
    listing = out.get(reverse("evaluation:list-permission-replays", args=[slug])).content.decode()
    assert "1 leak" in listing and "salaries" not in listing
    # Labellers never reach the page.
    assert login(world["people"]["ann"]).get(page).status_code == 403


def test_the_cli_agrees_on_the_exported_bundle_with_per_user_runs_of_a_built_in_retriever(
    world, tmp_path, capsys
):
    project = world["project"]
    scheme = documents.add_chunking_scheme(project=project, name="whole", strategy="document")
    documents.chunk_corpus(scheme=scheme)
    bm25 = retrieval.add_retriever(project=project, name="bm25", kind="bm25", scheme=scheme)
    retrieval.build_index(retriever=bm25)
    test_users.save_test_user(project=project, name="boss", unrestricted=True)
    call_command(
        "export_gold", "--project", project.slug, "--set", "hr", "--out", str(tmp_path / "g")
    )
    bundle = tmp_path / "g"
    call_command("export_acl", "--project", project.slug, "--out", str(tmp_path / "acl.json"))
    arguments = [
        "permissions",
        "--gold",
        str(bundle),
        "--acl",
        str(tmp_path / "acl.json"),
        "--fail-on-leak",
        "--format",
        "json",
    ]
    for name in ("alice", "bob", "boss"):
        out = tmp_path / f"{name}.jsonl"
        call_command(
            "retrieve",
            "--project",
            project.slug,
            "--set",
            "hr,canaries",
            "--retriever",
            "bm25",
            "--k",
            "5",
            "--out",
            str(out),
            "--as-test-user",
            name,
        )
        arguments.append(f"--run-as={name}={out}")
    capsys.readouterr()
    assert evaluation_cli(arguments) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["leaks"] == 0 and report["reference"] == "boss"
    # The bundle flags the canaries, so the CLI checks them like any document.
    corpus = [json.loads(line) for line in (bundle / "corpus.jsonl").read_text().splitlines()]
    assert {d["doc_id"] for d in corpus if d.get("canary")} == {c.doc_id for c in world["canaries"]}
    beir = (bundle / "beir" / "corpus.jsonl").read_text()
    assert not any(c.doc_id in beir for c in world["canaries"])
    # A run made without the user's filter leaks, and the gate says so.
    leaky = tmp_path / "bob-unfiltered.jsonl"
    call_command(
        "retrieve",
        "--project",
        project.slug,
        "--set",
        "hr,canaries",
        "--retriever",
        "bm25",
        "--k",
        "5",
        "--out",
        str(leaky),
        "--as-test-user",
        "boss",
    )
    arguments[arguments.index(f"--run-as=bob={tmp_path / 'bob.jsonl'}")] = f"--run-as=bob={leaky}"
    assert evaluation_cli(arguments) == 1
    err = capsys.readouterr().err
    assert any(f"leak: bob got {c.doc_id}" in err for c in world["canaries"])


def test_an_http_evaluation_run_is_stored_like_a_built_in_one(world):
    server = team_index(world)
    server.documents.append(IndexedDocument("ghost", "How many days carry over? Ask HR."))
    retriever = http_retriever(world["project"], server)
    try:
        job = evaluation_runs.start_retriever_run(
            gold_set=world["gold_set"], retriever=retriever, user=world["people"]["lea"]
        )
        job = wait_for_job(job, timeout=60)
    finally:
        server.stop()
    assert job.state == "succeeded", (job.message, job.errors)
    run = EvaluationRun.objects.get(gold_set=world["gold_set"])
    assert run.source == "retriever" and run.retriever == retriever and run.questions == 3
    lines = [json.loads(line) for line in bytes(run.content).decode().splitlines()]
    found = {r["doc_id"] for line in lines for r in line["results"]}
    # Canaries and documents Goldset does not have are not content; the job says how results
    # were placed and lists the unknown one.
    canaries = {c.doc_id for c in world["canaries"]}
    assert found and not any(d in canaries or d == "ghost" for d in found)
    assert "results placed" in job.message
    assert any(e.get("doc_id") == "ghost" for e in job.errors)
    assert Document.objects.filter(is_canary=True).count() == 2


def test_replay_permissions_and_plant_canaries_commands_with_their_exit_codes(
    world, tmp_path, capsys
):
    from django.core.management.base import CommandError

    project = world["project"]
    out = tmp_path / "canaries.jsonl"
    call_command(
        "plant_canaries",
        "--project",
        project.slug,
        "--group",
        GROUP,
        "--count",
        "1",
        "--set",
        "more-canaries",
        "--out",
        str(out),
    )
    planted = [json.loads(line) for line in out.read_text().splitlines()]
    assert planted[0]["access_groups"] == [GROUP] and planted[0]["doc_id"].startswith("memo-")
    assert "1 canaries planted" in capsys.readouterr().out
    with pytest.raises(CommandError, match="No access group 'nope'") as refused:
        call_command("plant_canaries", "--project", project.slug, "--group", "nope")
    assert refused.value.returncode == 2

    server = team_index(world, leaks={"bob": {"salaries"}})
    http_retriever(project, server)
    report = tmp_path / "report.json"
    try:
        with pytest.raises(CommandError, match="1 leak found") as leaked:
            call_command(
                "replay_permissions",
                "--project",
                project.slug,
                "--set",
                "hr",
                "--retriever",
                "ours",
                "--k",
                "5",
                "--fail-on-leak",
                "--json",
                str(report),
            )
        assert leaked.value.returncode == 1
        captured = capsys.readouterr()
        assert "leak: bob got salaries (groups hr-confidential)" in captured.err
        assert "bob: 1 leaked of" in captured.out
        assert json.loads(report.read_text())["leaks"] == 1
        # Alice alone passes.
        call_command(
            "replay_permissions",
            "--project",
            project.slug,
            "--set",
            "hr",
            "--retriever",
            "ours",
            "--users",
            "alice",
            "--fail-on-leak",
        )
        assert "No leak" in capsys.readouterr().out
        with pytest.raises(CommandError, match="No test user 'carol'") as refused:
            call_command(
                "replay_permissions",
                "--project",
                project.slug,
                "--set",
                "hr",
                "--retriever",
                "ours",
                "--users",
                "carol",
            )
        assert refused.value.returncode == 2
    finally:
        server.stop()
